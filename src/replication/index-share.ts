/**
 * Index sharing over a JetStream stream, for the approximate prefix index (engines that
 * publish KV events need none of this: every replica subscribes to every engine).
 *
 * Out: the prefix-cache plugin's local changes (routing inserts, calibration removals,
 * restart clears) are batched in the IndexOutbox and published to `<prefix>.index`, one
 * batch at a time with the stream's ack; a failed publish stays at the head and is retried
 * on the next flush, so an outage loses only what overflows the outbox.
 *
 * In: one consumer reads the stream from this replica's last applied sequence + 1
 * (from the beginning on start: the stream's max age is the index lifetime, so replaying it
 * warms a new or restarted replica up) and applies every batch through the plugin's
 * `apply`, its own included: a replica already applied its own changes when it routed, and
 * applying them again in stream order (a touch: idempotent) makes every replica's LRU order
 * the stream's order, so capacity evictions pick the same entries everywhere — otherwise,
 * after an outage, each replica would hold its own outage-time inserts as older than the
 * others' and evict different blocks for as long as the capacity takes to turn over.
 * Batches carry the replica id plus a per-process incarnation (stats tell own from others').
 * When the consumer fails (NATS away, stream gone), it is recreated from the last sequence
 * once the link is back: that is the catch-up after an outage.
 *
 * Replay progress: the stream's last sequence when the consumer (re)starts is the target;
 * `caughtUp` turns true once everything up to it was applied.
 */
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  nanos,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type NatsConnection,
} from 'nats';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../logging/logger.js';
import type { PrefixIndexReplica } from '../plugins/multi/prefix-index-replica.js';
import { abortableSleep } from '../util/abortable-sleep.js';
import type { Clock } from '../util/clock.js';
import { IndexOutbox, type OutboxStats } from './index-outbox.js';
import type { ReplicationOptions } from './replication-config.js';
import { decodeIndexBatch, WIRE_LIMITS } from './wire-codec.js';

export interface IndexShareOptions {
  readonly replicaId: string;
  readonly subject: string;
  readonly settings: ReplicationOptions['index'];
  readonly reconnectWaitMs: number;
  readonly index: PrefixIndexReplica;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** A consumer nobody pulls from for this long (its replica died) is removed by the server. */
const CONSUMER_INACTIVE_MS = 30_000;

export const INDEX_DROP_REASONS = ['malformed', 'block-size', 'unknown-endpoint', 'outbox-full'] as const;
export type IndexDropReason = (typeof INDEX_DROP_REASONS)[number];

export interface ReplayProgress {
  /** The stream's last sequence when the consumer last (re)started. */
  readonly targetSeq: number;
  /** The last stream sequence this replica applied (or skipped as its own). */
  readonly appliedSeq: number;
  /** Everything up to targetSeq is applied. */
  readonly caughtUp: boolean;
  /** Time from the consumer's (re)start to caught up (the last catch-up), ms. */
  readonly lastCatchUpMs?: number;
  /** Consumer (re)starts. */
  readonly consumerStarts: number;
}

export interface IndexShareStats {
  readonly batchesPublished: number;
  readonly changesPublished: number;
  readonly publishErrors: number;
  readonly batchesReceived: number;
  /** Other replicas' changes applied. */
  readonly changesApplied: number;
  /** This process's own batches applied again in stream order (see the header). */
  readonly ownBatchesReapplied: number;
  readonly dropped: Readonly<Record<IndexDropReason, number>>;
  readonly outbox: OutboxStats;
  readonly replay: ReplayProgress;
}

export class IndexShare {
  private readonly outbox: IndexOutbox;
  /** `r` of the batches this process publishes. */
  readonly publisher: string;
  private readonly abort = new AbortController();
  private nc: NatsConnection | undefined;
  private unobserve: (() => void) | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing = false;
  private consumerLoop: Promise<void> | undefined;
  private messages: ConsumerMessages | undefined;
  private wake: (() => void) | undefined;
  private readonly caughtUpWaiters = new Set<() => void>();

  private batchesPublished = 0;
  private changesPublished = 0;
  private publishErrors = 0;
  private batchesReceived = 0;
  private changesApplied = 0;
  private ownReapplied = 0;
  private readonly dropped: Record<IndexDropReason, number> = { malformed: 0, 'block-size': 0, 'unknown-endpoint': 0, 'outbox-full': 0 };
  private targetSeq = 0;
  private appliedSeq = 0;
  private caughtUp = false;
  private consumerStarts = 0;
  private consumerStartedAt = 0;
  private lastCatchUpMs: number | undefined;

  constructor(private readonly opts: IndexShareOptions) {
    const s = opts.settings;
    // The replica id plus this process's incarnation: a replica restarted under the same
    // (configured) id must replay what its previous life published, not skip it as its own.
    this.publisher = `${opts.replicaId}/${randomBytes(4).toString('hex')}`;
    this.outbox = new IndexOutbox(this.publisher, opts.index.blockChars, s.maxBatchChanges, s.maxOutboxBytes);
  }

  start(): void {
    if (this.unobserve !== undefined) return;
    this.observeLocal();
    this.flushTimer = setInterval(() => void this.flush(), this.opts.settings.flushIntervalMs);
    this.flushTimer.unref();
    this.consumerLoop = this.consume();
  }

  /** Starts collecting the index's local changes into the outbox (start() does it; a transport with its own clock calls it alone). */
  observeLocal(): void {
    this.unobserve ??= this.opts.index.observe((d) => this.outbox.add(d));
  }

  /**
   * One flush without NATS, for a transport that keeps its own time and order (the fleet
   * simulator's): hands every queued batch to `send`, oldest first, as `flush` publishes them.
   */
  flushTo(send: (bytes: Uint8Array) => void): void {
    for (let b = this.outbox.peek(); b !== undefined; b = this.outbox.peek()) {
      send(b.bytes);
      this.outbox.shift();
      this.batchesPublished++;
      this.changesPublished += b.changes;
    }
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.unobserve?.();
    this.unobserve = undefined;
    clearInterval(this.flushTimer);
    this.messages?.stop();
    this.wake?.();
    for (const w of this.caughtUpWaiters) w();
    await this.consumerLoop;
  }

  /** Link up. After a reconnect the consumer is restarted, so it re-reads the target and catches up from the last sequence. */
  up(nc: NatsConnection): void {
    this.nc = nc;
    this.messages?.stop();
    this.wake?.();
    void this.flush();
  }

  down(): void {
    this.nc = undefined;
  }

  /** Resolves once the replay reached its target, or after `ms`. */
  async waitCaughtUp(ms: number): Promise<boolean> {
    if (this.caughtUp) return true;
    let timer: NodeJS.Timeout | undefined;
    let waiter: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      waiter = resolve;
      this.caughtUpWaiters.add(resolve);
      timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
    if (waiter !== undefined) this.caughtUpWaiters.delete(waiter);
    return this.caughtUp;
  }

  stats(): IndexShareStats {
    const o = this.outbox.stats();
    return {
      batchesPublished: this.batchesPublished,
      changesPublished: this.changesPublished,
      publishErrors: this.publishErrors,
      batchesReceived: this.batchesReceived,
      changesApplied: this.changesApplied,
      ownBatchesReapplied: this.ownReapplied,
      dropped: { ...this.dropped, 'outbox-full': o.droppedChanges },
      outbox: o,
      replay: {
        targetSeq: this.targetSeq,
        appliedSeq: this.appliedSeq,
        caughtUp: this.caughtUp,
        ...(this.lastCatchUpMs !== undefined ? { lastCatchUpMs: this.lastCatchUpMs } : {}),
        consumerStarts: this.consumerStarts,
      },
    };
  }

  /** Publishes queued batches, oldest first, until the outbox is empty or a publish fails. */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      for (;;) {
        const nc = this.nc;
        if (nc === undefined || nc.isClosed()) return;
        const b = this.outbox.peek();
        if (b === undefined) return;
        try {
          await nc.jetstream().publish(this.opts.subject, b.bytes, { timeout: 2000 });
        } catch (err) {
          this.publishErrors++;
          // A batch the server refuses for what it is (too big, no such stream subject) never
          // goes through: drop it instead of blocking the queue. Anything else is retried.
          if (/payload|message size exceeds/i.test(String(err))) {
            this.opts.logger.warn('replication: index batch refused by NATS; dropped', { error: String(err), changes: b.changes });
            this.outbox.shift(true);
            continue;
          }
          this.opts.logger.debug('replication: index batch not published yet', { error: String(err) });
          return;
        }
        this.outbox.shift();
        this.batchesPublished++;
        this.changesPublished += b.changes;
      }
    } finally {
      this.flushing = false;
    }
  }

  private async consume(): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      const nc = this.nc;
      if (nc === undefined || nc.isClosed()) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, this.opts.reconnectWaitMs).unref();
        });
        this.wake = undefined;
        continue;
      }
      try {
        await this.readStream(nc);
        failures = 0;
      } catch (err) {
        // The first failure in a row is worth a warning (e.g. JetStream not enabled); repeats are debug.
        if (!signal.aborted) {
          const fields = { error: String(err), appliedSeq: this.appliedSeq };
          if (failures++ === 0) this.opts.logger.warn('replication: index stream not readable; routing on own index, will retry', fields);
          else this.opts.logger.debug('replication: index stream still not readable', fields);
        }
      }
      this.messages = undefined;
      if (!signal.aborted) await abortableSleep(this.opts.reconnectWaitMs, signal);
    }
  }

  private async readStream(nc: NatsConnection): Promise<void> {
    const s = this.opts.settings;
    const jsm = await nc.jetstreamManager({ timeout: 2000 });
    let lastSeq: number;
    let firstSeq: number;
    try {
      const info = await jsm.streams.info(s.stream);
      if (info.config.max_age !== nanos(s.maxAgeMs) || info.config.max_bytes !== s.maxBytes) {
        await jsm.streams.update(s.stream, { max_age: nanos(s.maxAgeMs), max_bytes: s.maxBytes });
      }
      lastSeq = info.state.last_seq;
      firstSeq = info.state.first_seq;
    } catch (err) {
      if (!/not found/i.test(String(err))) throw err;
      const info = await jsm.streams.add({
        name: s.stream,
        subjects: [this.opts.subject],
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        storage: s.storage === 'memory' ? StorageType.Memory : StorageType.File,
        num_replicas: s.streamReplicas,
        max_age: nanos(s.maxAgeMs),
        max_bytes: s.maxBytes,
        max_msg_size: WIRE_LIMITS.maxMessageBytes,
      });
      lastSeq = info.state.last_seq;
      firstSeq = info.state.first_seq;
    }
    // A stream that restarted empty (memory storage, or recreated) numbers from 1 again.
    if (this.appliedSeq > lastSeq) this.appliedSeq = 0;
    this.targetSeq = lastSeq;
    this.consumerStarts++;
    this.consumerStartedAt = this.opts.clock.nowMs();
    this.caughtUp = false;
    this.checkCaughtUp();
    // An ephemeral pull consumer without acks, recreated from the last applied sequence on
    // every (re)start; the server drops it after `inactive_threshold` once nobody pulls.
    const start = this.appliedSeq + 1;
    const from =
      start > 1 && start >= firstSeq
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start }
        : { deliver_policy: DeliverPolicy.All };
    const ci = await jsm.consumers.add(s.stream, {
      ...from,
      ack_policy: AckPolicy.None,
      filter_subject: this.opts.subject,
      inactive_threshold: nanos(CONSUMER_INACTIVE_MS),
      mem_storage: true,
    });
    const consumer = await nc.jetstream().consumers.get(s.stream, ci.name);
    const messages = await consumer.consume({ max_messages: 128 });
    this.messages = messages;
    for await (const m of messages) {
      this.receive(m.data);
      this.appliedSeq = m.seq;
      this.checkCaughtUp();
    }
  }

  /** Applies one batch read from the stream (in stream order; own batches too: see the header). */
  receive(data: Uint8Array): void {
    const b = decodeIndexBatch(data);
    if (b === undefined) {
      this.dropped.malformed++;
      return;
    }
    const own = b.replicaId === this.publisher;
    if (own) this.ownReapplied++;
    else this.batchesReceived++;
    if (b.blockChars !== this.opts.index.blockChars) {
      this.dropped['block-size'] += b.changes.length;
      return;
    }
    for (const c of b.changes) {
      if (!this.opts.index.apply(c)) this.dropped['unknown-endpoint']++;
      else if (!own) this.changesApplied++;
    }
  }

  private checkCaughtUp(): void {
    if (this.caughtUp || this.appliedSeq < this.targetSeq) return;
    this.caughtUp = true;
    this.lastCatchUpMs = this.opts.clock.nowMs() - this.consumerStartedAt;
    for (const w of this.caughtUpWaiters) w();
    this.caughtUpWaiters.clear();
  }
}
