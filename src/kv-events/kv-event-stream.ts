/**
 * What the router does with one engine's KV-event messages, whatever carries them: a ZMQ
 * socket (kv-event-subscriber.ts) or the fleet simulator's in-process feed
 * (src/simulate/kv-event-feed.ts). One implementation, so the simulator studies the same
 * sequence checks, resyncs and index updates the router runs.
 *
 * Per message: decode the three frames (a malformed one is counted and resyncs the engine:
 * its later events might depend on it), judge the sequence number (sequence-tracker.ts: 0 is
 * a fresh engine, trusted from here; a jump is lost messages, so the engine is resynced),
 * apply the events to the event-fed index, count them, and measure the lag (receiver clock −
 * the batch's engine timestamp; same machine or NTP-synced).
 */
import type { EventFedIndex } from '../precise-index/event-fed-index.js';
import type { Clock } from '../util/clock.js';
import type { HistogramCell, HotPathHistogram } from '../util/hot-path-histogram.js';
import { decodeKvEventMessage, KvWireError, type KvEventBatch } from './kv-event-wire.js';
import { SequenceTracker } from './sequence-tracker.js';

export interface KvStreamTarget {
  /** Dense endpoint index (Endpoint.index). */
  readonly endpointIndex: number;
  readonly endpointId: string;
  /** Model the engine serves (seeds the router's block keys). */
  readonly model: string;
}

export interface KvEventStreamOptions {
  readonly clock: Clock;
  /** Receiver clock in ms for lag (default Date.now). */
  readonly wallMs?: () => number;
  /** Lag of every applied message in seconds, by endpoint id (the metrics' histogram). */
  readonly lagSeconds?: HotPathHistogram<'endpoint'>;
  /** Called after every applied message (tests, benchmarks). */
  readonly onApplied?: (endpointIndex: number, batch: KvEventBatch) => void;
}

export class KvEventStream {
  private readonly tracker = new SequenceTracker();
  private readonly wallMs: () => number;
  private readonly lagCell: HistogramCell | undefined;
  messages = 0;
  stored = 0;
  removed = 0;
  cleared = 0;
  gaps = 0;
  decodeErrors = 0;
  lastSeq: bigint | undefined;
  lagLast: number | undefined;
  lagMax = 0;

  constructor(
    private readonly index: EventFedIndex,
    readonly target: KvStreamTarget,
    private readonly opts: KvEventStreamOptions,
  ) {
    this.wallMs = opts.wallMs ?? Date.now;
    this.lagCell = opts.lagSeconds?.cell(target.endpointId);
  }

  /** One message's frames, in the order the carrier received them. */
  receive(frames: readonly Uint8Array[]): void {
    const e = this.target.endpointIndex;
    const now = this.opts.clock.nowMs();
    let batch: KvEventBatch;
    try {
      batch = decodeKvEventMessage(frames);
    } catch (err) {
      if (!(err instanceof KvWireError)) throw err;
      this.decodeErrors++;
      this.tracker.reset();
      this.index.resync(e, now);
      return;
    }
    this.messages++;
    this.lastSeq = batch.seq;
    const verdict = this.tracker.observe(batch.seq);
    if (verdict === 'fresh') this.index.markFresh(e);
    else if (verdict === 'gap') {
      this.gaps++;
      this.index.resync(e, now);
    }
    for (const ev of batch.events) {
      if (ev.type === 'BlockStored') this.stored++;
      else if (ev.type === 'BlockRemoved') this.removed++;
      else this.cleared++;
    }
    this.index.apply(e, this.target.model, batch.events, now);
    const lag = Math.max(0, this.wallMs() - batch.ts * 1000);
    this.lagLast = lag;
    if (lag > this.lagMax) this.lagMax = lag;
    if (this.lagCell !== undefined) this.opts.lagSeconds!.observe(this.lagCell, lag / 1000);
    this.opts.onApplied?.(e, batch);
  }

  /**
   * The carrier lost messages it cannot count (a disconnect, a dropped queue): what the index
   * knows may be stale, so the engine is resynced and the next message judged as a first.
   */
  interrupted(): void {
    this.tracker.reset();
    this.index.resync(this.target.endpointIndex, this.opts.clock.nowMs());
  }
}
