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
 * - Sequence numbers (sequence-tracker.ts) and socket disconnects decide resyncs: a gap or a
 *   disconnect resyncs; a stream that starts at 0 is a fresh engine (empty cache), trusted.
 * - A malformed message is counted and resyncs the engine (its later events might depend on
 *   the one we could not read); it never throws into the event loop.
 * - Lag = router wall clock − the batch's engine timestamp (same machine or NTP-synced),
 *   reported as the last and the maximum value per engine.
 *
 * Lifecycle: `setSources` opens and closes streams to match the list; `stop()` closes all.
 */
import { Subscriber } from 'zeromq';
import type { Clock } from '../util/clock.js';
import type { HistogramCell, HotPathHistogram } from '../util/hot-path-histogram.js';
import type { EventFedIndex } from '../precise-index/event-fed-index.js';
import { decodeKvEventMessage, KvWireError, type KvEventBatch } from './kv-event-wire.js';
import { SequenceTracker } from './sequence-tracker.js';

export interface KvEventSource {
  /** Dense endpoint index (Endpoint.index). */
  readonly endpointIndex: number;
  readonly endpointId: string;
  /** `tcp://host:port` of the engine's publisher. */
  readonly url: string;
  /** ZMQ topic prefix to subscribe to ('' = all). */
  readonly topic: string;
  /** Model the engine serves (seeds the router's block keys). */
  readonly model: string;
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

class EngineStream {
  readonly tracker = new SequenceTracker();
  readonly queue: Uint8Array[][] = [];
  connected = false;
  messages = 0;
  stored = 0;
  removed = 0;
  cleared = 0;
  gaps = 0;
  disconnects = 0;
  overflows = 0;
  droppedMessages = 0;
  decodeErrors = 0;
  lagCell: HistogramCell | undefined;
  lastSeq: bigint | undefined;
  lagLast: number | undefined;
  lagMax = 0;
  closed = false;
  readonly socket: Subscriber;

  constructor(
    readonly source: KvEventSource,
    reconnectMs: number,
  ) {
    this.socket = new Subscriber({ receiveHighWaterMark: 100_000, reconnectInterval: reconnectMs, linger: 0 });
  }
}

export class KvEventSubscriber {
  private readonly streams = new Map<number, EngineStream>();
  private readonly maxQueue: number;
  private readonly batchMax: number;
  private readonly reconnectMs: number;
  private readonly wallMs: () => number;
  private drainScheduled = false;
  private stopped = false;

  constructor(
    private readonly target: EventFedIndex,
    private readonly opts: KvEventSubscriberOptions,
  ) {
    this.maxQueue = opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    this.batchMax = opts.batchMax ?? DEFAULT_BATCH_MAX;
    this.reconnectMs = opts.reconnectMs ?? 500;
    this.wallMs = opts.wallMs ?? Date.now;
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
    return [...this.streams.values()].map((st) => ({
      endpointId: st.source.endpointId,
      url: st.source.url,
      connected: st.connected,
      messages: st.messages,
      events: { stored: st.stored, removed: st.removed, cleared: st.cleared },
      gaps: st.gaps,
      disconnects: st.disconnects,
      overflows: st.overflows,
      droppedMessages: st.droppedMessages,
      decodeErrors: st.decodeErrors,
      queued: st.queue.length,
      ...(st.lastSeq !== undefined ? { lastSeq: st.lastSeq.toString() } : {}),
      ...(st.lagLast !== undefined ? { lagMsLast: st.lagLast } : {}),
      lagMsMax: st.lagMax,
    }));
  }

  stop(): void {
    this.stopped = true;
    for (const st of this.streams.values()) this.close(st);
    this.streams.clear();
  }

  private open(source: KvEventSource): void {
    const st = new EngineStream(source, this.reconnectMs);
    st.lagCell = this.opts.lagSeconds?.cell(source.endpointId);
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
      st.tracker.reset();
      this.target.resync(source.endpointIndex, this.opts.clock.nowMs());
    });
    st.socket.connect(source.url);
    st.socket.subscribe(source.topic);
    void this.receive(st);
  }

  private async receive(st: EngineStream): Promise<void> {
    try {
      for await (const frames of st.socket) {
        if (st.closed) break;
        if (st.queue.length >= this.maxQueue) {
          st.overflows++;
          st.droppedMessages += st.queue.length + 1;
          st.queue.length = 0;
          st.tracker.reset();
          this.target.resync(st.source.endpointIndex, this.opts.clock.nowMs());
          continue; // this message is dropped too: the next one is judged as a first
        }
        st.queue.push(frames);
        this.scheduleDrain();
      }
    } catch {
      // Closing the socket ends the iterator with an error; anything else is unexpected.
      if (!st.closed) st.decodeErrors++;
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
        this.applyOne(st, frames);
      }
      if (st.queue.length > 0) more = true;
    }
    if (more && !this.stopped) this.scheduleDrain();
  }

  private applyOne(st: EngineStream, frames: Uint8Array[]): void {
    const e = st.source.endpointIndex;
    const now = this.opts.clock.nowMs();
    let batch: KvEventBatch;
    try {
      batch = decodeKvEventMessage(frames);
    } catch (err) {
      if (!(err instanceof KvWireError)) throw err;
      st.decodeErrors++;
      st.tracker.reset();
      this.target.resync(e, now);
      return;
    }
    st.messages++;
    st.lastSeq = batch.seq;
    const verdict = st.tracker.observe(batch.seq);
    if (verdict === 'fresh') this.target.markFresh(e);
    else if (verdict === 'gap') {
      st.gaps++;
      this.target.resync(e, now);
    }
    for (const ev of batch.events) {
      if (ev.type === 'BlockStored') st.stored++;
      else if (ev.type === 'BlockRemoved') st.removed++;
      else st.cleared++;
    }
    this.target.apply(e, st.source.model, batch.events, now);
    const lag = Math.max(0, this.wallMs() - batch.ts * 1000);
    st.lagLast = lag;
    if (lag > st.lagMax) st.lagMax = lag;
    if (st.lagCell !== undefined) this.opts.lagSeconds!.observe(st.lagCell, lag / 1000);
    this.opts.onApplied?.(e, batch);
  }

  private close(st: EngineStream): void {
    st.closed = true;
    st.queue.length = 0;
    try {
      st.socket.close();
    } catch {
      // already closed
    }
  }
}
