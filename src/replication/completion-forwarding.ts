/**
 * Completions forwarded to the replica that holds the ticket. Behind a Kubernetes Service
 * (Istio, Envoy Gateway) Envoy's gRPC access log stream reaches one arbitrary router
 * replica, while the request was routed — and its ticket held — by another. A replica that
 * reads an entry naming another owner's ticket (the key's owner tag, pending-responses.ts)
 * sends it to that owner on `<prefix>.completions.<owner>` (core NATS; one message per
 * owner per access-log batch; ticket key, status, served-by host and token counts: no
 * prompt text), and the owner finishes it exactly as its own access log entry would.
 *
 * Losses are bounded, never silent:
 * - NATS away on the sending side: batches wait in a bounded outbox and go out when the link
 *   is back (`outbox-full` drops beyond it). The owner may still miss them (it may not have
 *   re-subscribed yet), so:
 * - NATS away on this side, or a peer vanishing (it may have been the one receiving the log
 *   stream, and Envoy's buffered entries died with it): this replica marks its completion
 *   path lossy (`OwnedTickets.markLossy`), and its tickets alive then expire after the
 *   orphan age instead of the route timeout.
 * - An owner seen alive and then gone (its load reports stopped) gets nothing more: its
 *   tickets died with it (`owner-gone`). An owner never seen is still sent to (a new
 *   replica's first load report may trail its first request); NATS drops it when no one
 *   listens.
 * Duplicates (the same entry reaching several replicas) are harmless: the first finishes
 * the ticket, the rest are counted as `unknown-ticket` by the owner.
 */
import { createHash } from 'node:crypto';
import type { NatsConnection, Subscription } from 'nats';
import type { RequestOutcome } from '../core/types.js';
import type { Logger } from '../logging/logger.js';
import { decodeCompletions, encodeCompletions, type ForwardedCompletion } from './wire-codec.js';

/** The ticket holder's side (src/extproc/pending-responses.ts implements it). */
export interface OwnedTickets {
  /** This replica's owner tag (the first part of every key it hands out). */
  readonly owner: string;
  /** Finishes a held ticket; false when none is held under `key`. */
  complete(key: string, outcome: RequestOutcome): boolean;
  /**
   * The completion path lost entries now (`ongoing`: and keeps losing them until false;
   * `graceMs`: and may for this long after).
   */
  markLossy(ongoing: boolean, graceMs?: number): void;
}

/** Who else is alive (the load-share peer table). */
export interface LivePeers {
  peerIds(): readonly string[];
}

export type CompletionDropReason = 'owner-gone' | 'outbox-full' | 'malformed' | 'unknown-ticket' | 'not-owner';

export interface CompletionForwardingStats {
  readonly owner: string;
  /** Completions sent to their owners (out) and received and finished here (in). */
  readonly forwardedOut: number;
  readonly forwardedIn: number;
  readonly dropped: Readonly<Record<CompletionDropReason, number>>;
  readonly outboxEntries: number;
}

export interface CompletionForwardingOptions {
  readonly replicaId: string;
  /** Subjects are `<subjectPrefix>.completions.<owner>`. */
  readonly subjectPrefix: string;
  readonly tickets: OwnedTickets;
  /** Absent (load sharing off): no liveness view, every owner is sent to. */
  readonly peers?: LivePeers;
  /** Completions kept while NATS is away (oldest batches dropped beyond it). */
  readonly maxOutboxEntries: number;
  /** How often the peer set is checked for vanished replicas. */
  readonly checkIntervalMs: number;
  /** After a vanished peer or a reconnect, entries may be lost for this long more. */
  readonly lossyGraceMs: number;
  readonly logger: Logger;
}

/** Owner tags of gone replicas remembered (oldest forgotten beyond it). */
const MAX_GONE = 1024;

/** A replica's owner tag: 10 hex digits of SHA-256 of its replica id (a NATS subject token). */
export function ownerTagOf(replicaId: string): string {
  return createHash('sha256').update(replicaId).digest('hex').slice(0, 10);
}

export class CompletionForwarding {
  private readonly subjectBase: string;
  private nc: NatsConnection | undefined;
  private sub: Subscription | undefined;
  private outbox: { owner: string; batch: ForwardedCompletion[] }[] = [];
  private outboxEntries = 0;
  private live = new Set<string>();
  private readonly gone = new Set<string>();
  private readonly tagOf = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private out = 0;
  private in = 0;
  private readonly dropped: Record<CompletionDropReason, number> = {
    'owner-gone': 0,
    'outbox-full': 0,
    malformed: 0,
    'unknown-ticket': 0,
    'not-owner': 0,
  };

  constructor(private readonly opts: CompletionForwardingOptions) {
    this.subjectBase = `${opts.subjectPrefix}.completions.`;
  }

  /** Arms the peer check and marks the path lossy until the first connection. */
  start(): void {
    if (this.timer !== undefined) return;
    if (this.nc === undefined) this.opts.tickets.markLossy(true);
    this.timer = setInterval(() => this.checkPeers(), this.opts.checkIntervalMs);
    this.timer.unref();
  }

  /** Stops the peer check and listening; what waits in the outbox is dropped with the process. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe();
    this.nc = undefined;
  }

  /** Link up: subscribe to our subject (fresh connection) and flush what waited. */
  up(nc: NatsConnection, fresh: boolean): void {
    this.nc = nc;
    if (fresh || this.sub === undefined) {
      this.unsubscribe();
      this.sub = nc.subscribe(this.subjectBase + this.opts.tickets.owner, {
        callback: (err, msg) => err === null && this.receive(msg.data),
      });
    }
    // Entries may have been lost until now (and until the others have flushed and we are
    // subscribed): tickets alive meanwhile are at risk (bounded by the orphan age).
    this.opts.tickets.markLossy(false, this.opts.lossyGraceMs);
    const waiting = this.outbox;
    this.outbox = [];
    this.outboxEntries = 0;
    for (const w of waiting) this.publish(w.owner, w.batch);
  }

  down(): void {
    this.nc = undefined;
    this.live.clear();
    this.opts.tickets.markLossy(true);
  }

  /**
   * Completions of another owner's tickets, read from this replica's access log. Called by
   * the access log receiver once per owner per batch; never throws.
   */
  forward(owner: string, batch: ForwardedCompletion[]): void {
    if (batch.length === 0) return;
    if (this.gone.has(owner)) {
      this.dropped['owner-gone'] += batch.length;
      return;
    }
    if (this.nc === undefined || this.nc.isClosed()) {
      this.queue(owner, batch);
      return;
    }
    this.publish(owner, batch);
  }

  stats(): CompletionForwardingStats {
    return {
      owner: this.opts.tickets.owner,
      forwardedOut: this.out,
      forwardedIn: this.in,
      dropped: { ...this.dropped },
      outboxEntries: this.outboxEntries,
    };
  }

  /** One received message (exported through the class for unit tests). */
  receive(data: Uint8Array): void {
    const b = decodeCompletions(data);
    if (b === undefined) {
      this.dropped.malformed++;
      return;
    }
    const owner = this.opts.tickets.owner;
    for (const c of b.completions) {
      if (!c.key.startsWith(owner + '.')) this.dropped['not-owner']++;
      else if (this.opts.tickets.complete(c.key, c.outcome)) this.in++;
      else this.dropped['unknown-ticket']++;
    }
  }

  /** Compares the live peers with the last check: a vanished one makes the path lossy. */
  checkPeers(): void {
    const peers = this.opts.peers;
    if (peers === undefined || this.nc === undefined) return;
    const now = new Set<string>();
    for (const id of peers.peerIds()) now.add(this.tag(id));
    let vanished = false;
    for (const t of this.live) {
      if (now.has(t)) continue;
      vanished = true;
      this.gone.add(t);
      if (this.gone.size > MAX_GONE) this.gone.delete(this.gone.values().next().value!);
    }
    for (const t of now) this.gone.delete(t);
    this.live = now;
    if (vanished) {
      this.opts.logger.info('replication: a peer vanished; tickets alive now expire after the orphan age unless their completion arrives');
      // Until Envoy has moved its log stream off the dead replica, entries keep being lost.
      this.opts.tickets.markLossy(false, this.opts.lossyGraceMs);
    }
  }

  private unsubscribe(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
  }

  private tag(replicaId: string): string {
    let t = this.tagOf.get(replicaId);
    if (t === undefined) {
      t = ownerTagOf(replicaId);
      if (this.tagOf.size >= MAX_GONE) this.tagOf.clear();
      this.tagOf.set(replicaId, t);
    }
    return t;
  }

  private queue(owner: string, batch: ForwardedCompletion[]): void {
    this.outbox.push({ owner, batch });
    this.outboxEntries += batch.length;
    while (this.outboxEntries > this.opts.maxOutboxEntries && this.outbox.length > 0) {
      const old = this.outbox.shift()!;
      this.outboxEntries -= old.batch.length;
      this.dropped['outbox-full'] += old.batch.length;
    }
  }

  private publish(owner: string, batch: ForwardedCompletion[]): void {
    const nc = this.nc;
    if (nc === undefined) {
      this.queue(owner, batch);
      return;
    }
    try {
      nc.publish(this.subjectBase + owner, encodeCompletions(this.opts.replicaId, batch));
      this.out += batch.length;
    } catch (err) {
      this.opts.logger.debug('replication: completions not published', { error: String(err) });
      this.queue(owner, batch);
    }
  }
}
