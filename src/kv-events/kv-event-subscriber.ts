/**
 * One ZMQ SUB socket per engine, feeding that engine's KV events into the precise index.
 *
 * Why this shape:
 * - Receiving and applying are decoupled by a bounded queue per engine: the socket loop only
 *   queues raw frames; a drain scheduled with setImmediate decodes and applies at most
 *   `batchMax` messages per turn of the event loop, so an event storm cannot starve request
 *   handling. A queue that reaches `maxQueue` messages is dropped whole and the engine is
 *   resynced (its precise entries dropped): memory stays bounded and nothing stale survives.
 *   ZMQ's own receive high-water mark bounds what waits inside the socket.
 * - What a message does (decode, sequence check, apply, lag) is kv-event-stream.ts, shared
 *   with the fleet simulator's in-process feed; here, socket disconnects and a dropped queue
 *   resync the engine too. A malformed message never throws into the event loop.
 *
 * Lifecycle: `setSources` opens and closes streams to match the list; `stop()` closes all.
 */
import { Subscriber } from 'zeromq';
import type { Clock } from '../util/clock.js';
import type { HotPathHistogram } from '../util/hot-path-histogram.js';
import type { EventFedIndex } from '../precise-index/event-fed-index.js';
import type { KvEventBatch } from './kv-event-wire.js';
import { KvEventStream, type KvStreamTarget } from './kv-event-stream.js';

export interface KvEventSource extends KvStreamTarget {
  /** `tcp://host:port` of the engine's publisher. */
  readonly url: string;
  /** ZMQ topic prefix to subscribe to ('' = all). */
  readonly topic: string;
}

export interface KvEventSubscriberOptions {
  readonly clock: Clock;
  /** Wall clock in ms for lag (default Date.now). */
  readonly wallMs?: () => number;
  /** Messages queued per engine before the queue is dropped and the engine resynced. */
  readonly maxQueue?: number;
  /** Messages applied per event-loop turn, over all engines. */
  readonly batchMax?: number;
  /** ZMQ reconnect interval (ms). */
  readonly reconnectMs?: number;
  /** Lag of every applied message in seconds, by endpoint id (the metrics' histogram). */
  readonly lagSeconds?: HotPathHistogram<'endpoint'>;
  /** Called after every applied message (tests, benchmarks). */
  readonly onApplied?: (endpointIndex: number, batch: KvEventBatch) => void;
}

export interface KvStreamStats {
  readonly endpointId: string;
  readonly url: string;
  readonly connected: boolean;
  readonly messages: number;
  readonly events: { readonly stored: number; readonly removed: number; readonly cleared: number };
  readonly gaps: number;
  readonly disconnects: number;
  readonly overflows: number;
  /** Messages thrown away unapplied: a full queue, or queued when the socket disconnected. */
  readonly droppedMessages: number;
  readonly decodeErrors: number;
  readonly queued: number;
  readonly lastSeq?: string;
  readonly lagMsLast?: number;
  readonly lagMsMax: number;
}

const DEFAULT_MAX_QUEUE = 10_000;
const DEFAULT_BATCH_MAX = 256;

class EngineSocket {
  readonly queue: Uint8Array[][] = [];
  connected = false;
  disconnects = 0;
  overflows = 0;
  droppedMessages = 0;
  closed = false;
  readonly socket: Subscriber;

  constructor(
    readonly source: KvEventSource,
    readonly stream: KvEventStream,
    reconnectMs: number,
  ) {
    this.socket = new Subscriber({ receiveHighWaterMark: 100_000, reconnectInterval: reconnectMs, linger: 0 });
  }
}

export class KvEventSubscriber {
  private readonly streams = new Map<number, EngineSocket>();
  private readonly maxQueue: number;
  private readonly batchMax: number;
  private readonly reconnectMs: number;
  private drainScheduled = false;
  private stopped = false;

  constructor(
    private readonly target: EventFedIndex,
    private readonly opts: KvEventSubscriberOptions,
  ) {
    this.maxQueue = opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    this.batchMax = opts.batchMax ?? DEFAULT_BATCH_MAX;
    this.reconnectMs = opts.reconnectMs ?? 500;
  }

  /** Opens streams for new sources, closes those no longer listed (or whose URL changed). */
  setSources(sources: readonly KvEventSource[]): void {
    if (this.stopped) return;
    const wanted = new Map(sources.map((s) => [s.endpointIndex, s]));
    for (const [i, st] of this.streams) {
      const w = wanted.get(i);
      if (w === undefined || w.url !== st.source.url || w.topic !== st.source.topic) {
        this.close(st);
        this.streams.delete(i);
        this.target.forget(i);
      }
    }
    for (const s of sources) if (!this.streams.has(s.endpointIndex)) this.open(s);
  }

  stats(): KvStreamStats[] {
    return [...this.streams.values()].map((st) => {
      const s = st.stream;
      return {
        endpointId: st.source.endpointId,
        url: st.source.url,
        connected: st.connected,
        messages: s.messages,
        events: { stored: s.stored, removed: s.removed, cleared: s.cleared },
        gaps: s.gaps,
        disconnects: st.disconnects,
        overflows: st.overflows,
        droppedMessages: st.droppedMessages,
        decodeErrors: s.decodeErrors,
        queued: st.queue.length,
        ...(s.lastSeq !== undefined ? { lastSeq: s.lastSeq.toString() } : {}),
        ...(s.lagLast !== undefined ? { lagMsLast: s.lagLast } : {}),
        lagMsMax: s.lagMax,
      };
    });
  }

  stop(): void {
    this.stopped = true;
    for (const st of this.streams.values()) this.close(st);
    this.streams.clear();
  }

  private open(source: KvEventSource): void {
    const o = this.opts;
    const stream = new KvEventStream(this.target, source, {
      clock: o.clock,
      ...(o.wallMs !== undefined ? { wallMs: o.wallMs } : {}),
      ...(o.lagSeconds !== undefined ? { lagSeconds: o.lagSeconds } : {}),
      ...(o.onApplied !== undefined ? { onApplied: o.onApplied } : {}),
    });
    const st = new EngineSocket(source, stream, this.reconnectMs);
    this.streams.set(source.endpointIndex, st);
    st.socket.events.on('connect', () => {
      st.connected = true;
    });
    st.socket.events.on('disconnect', () => {
      if (st.closed) return;
      st.connected = false;
      st.disconnects++;
      // Events published while we are away are lost: what we know may go stale.
      st.droppedMessages += st.queue.length;
      st.queue.length = 0;
      st.stream.interrupted();
    });
    st.socket.connect(source.url);
    st.socket.subscribe(source.topic);
    void this.receive(st);
  }

  private async receive(st: EngineSocket): Promise<void> {
    try {
      for await (const frames of st.socket) {
        if (st.closed) break;
        if (st.queue.length >= this.maxQueue) {
          st.overflows++;
          st.droppedMessages += st.queue.length + 1;
          st.queue.length = 0;
          st.stream.interrupted();
          continue; // this message is dropped too: the next one is judged as a first
        }
        st.queue.push(frames);
        this.scheduleDrain();
      }
    } catch {
      // Closing the socket ends the iterator with an error; anything else is unexpected.
      if (!st.closed) st.stream.decodeErrors++;
    }
  }

  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.drainScheduled = false;
    let budget = this.batchMax;
    let more = false;
    for (const st of this.streams.values()) {
      while (budget > 0 && st.queue.length > 0) {
        const frames = st.queue.shift()!;
        budget--;
        st.stream.receive(frames);
      }
      if (st.queue.length > 0) more = true;
    }
    if (more && !this.stopped) this.scheduleDrain();
  }

  private close(st: EngineSocket): void {
    st.closed = true;
    st.queue.length = 0;
    try {
      st.socket.close();
    } catch {
      // already closed
    }
  }
}
