/**
 * Routed requests whose response the router does not watch itself: when Envoy reports
 * response completion through its gRPC access log (access-log-receiver.ts) instead of
 * streaming the response through ext_proc, the stream handler hands each ticket over here
 * at the decision, under a router-made key that travels in the decision's dynamic metadata
 * (`cacheroute.ticket`; clients cannot set metadata, so they cannot end someone else's
 * request). The access log entry of that request finishes it — on this replica, or, when
 * the log stream reached another replica, forwarded here over NATS
 * (src/replication/completion-forwarding.ts).
 *
 * Key: `<owner>.<seq>.<nonce>`. `owner` names the replica holding the ticket (a tag of its
 * replica id with replication, else random per process), so any replica can tell whose
 * ticket an entry names; the per-ticket nonce (48 random bits) keeps keys unguessable, so a
 * forged entry or forwarded completion cannot end a live request by counting.
 * Why a key of our own: x-request-id is kept from internal clients, so it may repeat.
 *
 * Why two age limits: an entry can be lost (Envoy's access log is lossy by design, e.g. while
 * its stream reconnects), so a ticket older than `maxAgeMs` (the longest response Envoy
 * allows) is finished as aborted and nothing stays counted in flight forever. When the
 * completion path is known to have lost entries — this replica's NATS link went down, or a
 * peer that may have been receiving the log stream vanished (`markLossy`) — every ticket
 * alive at that moment is "at risk" and expires `orphanAgeMs` after it, which is much
 * shorter: a leak is then bounded by the orphan age instead of the route timeout.
 *
 * Whether the log comes at all (`logWaitMs`): a gateway may send cacheroute no access log
 * (one that manages Envoy for the user). The log is `present` once an entry or forwarded
 * completion names one of this owner's keys — proof that Envoy logs to us with our metadata
 * — and stays so; until then it is `unknown`, and a ticket whose stream ended without
 * showing the response end (`awaitLog`) waits at most `logWaitMs` for the log; past that the
 * log is taken as `absent` (and the ticket finished), and later tickets are finished from
 * their streams (completion-mode.ts) until an entry arrives after all.
 */
import { randomBytes } from 'node:crypto';
import type { RequestOutcome } from '../core/types.js';
import type { RouteTicket } from '../core/routing-service.js';
import type { Clock } from '../util/clock.js';
import type { EdgeStats } from './edge-stats.js';
import { noopEdgeStats } from './edge-stats.js';

export interface PendingResponsesOptions {
  readonly clock: Clock;
  /** A held ticket older than this is finished as aborted by `sweep`. */
  readonly maxAgeMs: number;
  /**
   * A ticket alive when the completion path lost entries (`markLossy`) is finished as
   * aborted this long after that moment. Default: maxAgeMs (no shorter bound).
   */
  readonly orphanAgeMs?: number;
  readonly stats?: EdgeStats;
  /** Owner tag that starts every key (default: 8 random hex digits, distinct per router process). */
  readonly owner?: string;
  /** Per-ticket nonce (default: 12 hex digits from crypto randomness); tests inject a fixed one. */
  readonly nonce?: () => string;
  /**
   * Detect a missing access log: how long a ticket whose stream ended unseen waits for a
   * first entry before the log counts as absent. Default 0: the log is trusted to come
   * (state always `present`).
   */
  readonly logWaitMs?: number;
}

/**
 * How long the router waits for a first access log entry before it takes the log as missing
 * (PendingResponsesOptions.logWaitMs): longer than Envoy's default flush interval (1 s, the
 * one Envoy Gateway's ALS sink uses) plus the first responses, short enough that a gateway
 * sending no log leaves requests counted seconds, not the route timeout, after they ended.
 */
export const ACCESS_LOG_WAIT_MS = 10_000;

/** Whether Envoy's access log reaches this owner: proven, not yet known, or taken as missing. */
export type AccessLogState = 'present' | 'unknown' | 'absent';

interface Held {
  readonly ticket: RouteTicket;
  readonly sinceMs: number;
}

export interface PendingResponsesStats {
  readonly pending: number;
  /** Held tickets whose completion may have been lost (they expire after the orphan age). */
  readonly atRisk: number;
  readonly completed: number;
  /** Finished as aborted after maxAgeMs. */
  readonly expired: number;
  /** Finished as aborted after orphanAgeMs (completion path known lossy). */
  readonly orphaned: number;
  /** Completions naming a key of this owner that is not held (finished, expired, duplicate). */
  readonly unknown: number;
  /** Times the completion path was marked lossy. */
  readonly lossyMarks: number;
  /** Finished by what their ext_proc stream saw (the response completed, or the stream ended). */
  readonly byStream: number;
  /** Finished after waiting logWaitMs for an access log that never came. */
  readonly unconfirmed: number;
  readonly accessLog: AccessLogState;
}

/** Owner tags and key parts: characters that are safe in a NATS subject token. */
const OWNER_RE = /^[A-Za-z0-9_-]{1,32}$/;

/** The owner tag a ticket key names, or undefined for a key without one. */
export function ticketOwner(key: string): string | undefined {
  const dot = key.indexOf('.');
  if (dot <= 0) return undefined;
  const owner = key.slice(0, dot);
  return OWNER_RE.test(owner) ? owner : undefined;
}

/** Checks an owner tag (a NATS subject token); throws on a bad one. */
export function checkOwnerTag(owner: string): string {
  if (!OWNER_RE.test(owner)) throw new Error(`ticket owner tag must match ${OWNER_RE.source}: ${owner}`);
  return owner;
}

/** Random hex nonces drawn from one pooled buffer (one crypto call per 512 tickets). */
function pooledNonce(): () => string {
  let pool = Buffer.alloc(0);
  let at = 0;
  return () => {
    if (at + 6 > pool.length) {
      pool = randomBytes(6 * 512);
      at = 0;
    }
    const s = pool.toString('hex', at, at + 6);
    at += 6;
    return s;
  };
}

export class PendingResponses {
  private readonly held = new Map<string, Held>();
  /** Keys at risk → the lossy moment they were alive at, in that moment's order. */
  private readonly atRisk = new Map<string, number>();
  readonly owner: string;
  private readonly stats: EdgeStats;
  private readonly nonce: () => string;
  private readonly orphanAgeMs: number;
  private seq = 0;
  private lossyOngoing = false;
  private lossyUntilMs = -Infinity;
  private completedCount = 0;
  private expiredCount = 0;
  private orphanedCount = 0;
  private unknownCount = 0;
  private lossyMarks = 0;
  private byStreamCount = 0;
  private unconfirmedCount = 0;
  private timer: NodeJS.Timeout | undefined;
  private logState: AccessLogState;
  /** Keys whose stream ended unseen while the log was unknown → that moment, in order. */
  private readonly awaiting = new Map<string, number>();
  private readonly logWaitMs: number;

  constructor(private readonly options: PendingResponsesOptions) {
    this.owner = checkOwnerTag(options.owner ?? randomBytes(4).toString('hex'));
    this.stats = options.stats ?? noopEdgeStats;
    this.nonce = options.nonce ?? pooledNonce();
    this.orphanAgeMs = Math.min(options.orphanAgeMs ?? options.maxAgeMs, options.maxAgeMs);
    this.logWaitMs = options.logWaitMs ?? 0;
    this.logState = this.logWaitMs > 0 ? 'unknown' : 'present';
  }

  /** Whether the access log reaches this owner (see the header). */
  get accessLog(): AccessLogState {
    return this.logState;
  }

  /** Takes over `ticket`; returns the key its completion report must name. */
  hold(ticket: RouteTicket): string {
    const key = `${this.owner}.${(this.seq++).toString(36)}.${this.nonce()}`;
    const now = this.options.clock.nowMs();
    this.held.set(key, { ticket, sinceMs: now });
    // Held while completions cannot reach us: at risk from the start.
    if (this.lossyOngoing || now < this.lossyUntilMs) this.atRisk.set(key, now);
    return key;
  }

  /** True when `key` names this owner (held or not). */
  owns(key: string): boolean {
    return ticketOwner(key) === this.owner;
  }

  /**
   * The access log (or a replica forwarding it) reports `key`'s end: finishes its ticket.
   * Returns false if none is held (unknown, already finished, a duplicate). Either way the
   * log is now known to be present.
   */
  complete(key: string, outcome: RequestOutcome): boolean {
    if (this.logState !== 'present') {
      this.logState = 'present';
      this.awaiting.clear();
    }
    const h = this.held.get(key);
    if (h === undefined) {
      this.unknownCount++;
      return false;
    }
    this.held.delete(key);
    this.atRisk.delete(key);
    this.completedCount++;
    if (outcome.aborted) this.stats.streamError('ABORTED');
    h.ticket.finish(outcome);
    return true;
  }

  /** The ticket's own stream saw how it ended: finishes it (a later log entry counts as unknown). */
  finishFromStream(key: string, outcome: RequestOutcome): void {
    const h = this.held.get(key);
    if (h === undefined) return;
    this.held.delete(key);
    this.atRisk.delete(key);
    this.awaiting.delete(key);
    this.byStreamCount++;
    if (outcome.aborted) this.stats.streamError('ABORTED');
    h.ticket.finish(outcome);
  }

  /**
   * `key`'s stream ended without showing the response, and only the log can tell its end:
   * while the log is unknown, wait at most logWaitMs for it (see the header). Has no effect
   * once the log is present (the ticket waits for its entry up to maxAgeMs).
   */
  awaitLog(key: string): void {
    if (this.logState === 'unknown' && this.held.has(key)) this.awaiting.set(key, this.options.clock.nowMs());
  }

  /**
   * The completion path lost (or may have lost) entries now: every held ticket becomes at
   * risk. `ongoing` = it keeps losing them (e.g. NATS away) until `markLossy(false)`, so
   * tickets held meanwhile are at risk from their start; `graceMs` extends that past the
   * call (e.g. while Envoy moves its log stream off a dead replica). O(held) per call;
   * calls are rare.
   */
  markLossy(ongoing: boolean, graceMs = 0): void {
    const now = this.options.clock.nowMs();
    this.lossyMarks++;
    this.lossyOngoing = ongoing;
    this.lossyUntilMs = Math.max(this.lossyUntilMs, now + graceMs);
    for (const key of this.held.keys()) if (!this.atRisk.has(key)) this.atRisk.set(key, now);
  }

  /** True while the completion path is known to be losing entries (or within a grace after). */
  get lossy(): boolean {
    return this.lossyOngoing || this.options.clock.nowMs() < this.lossyUntilMs;
  }

  /** Tickets held now. */
  get size(): number {
    return this.held.size;
  }

  snapshot(): PendingResponsesStats {
    return {
      pending: this.held.size,
      atRisk: this.atRisk.size,
      completed: this.completedCount,
      expired: this.expiredCount,
      orphaned: this.orphanedCount,
      unknown: this.unknownCount,
      lossyMarks: this.lossyMarks,
      byStream: this.byStreamCount,
      unconfirmed: this.unconfirmedCount,
      accessLog: this.logState,
    };
  }

  /**
   * Finishes, as aborted, every ticket past maxAgeMs or at risk past orphanAgeMs; and every
   * ticket that waited logWaitMs for a log that never came (not aborted: its stream ended,
   * how is unknown), which makes the log `absent`. Returns how many.
   */
  sweep(nowMs: number = this.options.clock.nowMs()): number {
    let n = 0;
    for (const [key, since] of this.awaiting) {
      if (nowMs - since <= this.logWaitMs) break;
      this.awaiting.delete(key);
      const h = this.held.get(key);
      if (h === undefined) continue;
      this.held.delete(key);
      this.atRisk.delete(key);
      this.logState = 'absent';
      this.unconfirmedCount++;
      n++;
      h.ticket.finish({ aborted: false });
    }
    // Both maps follow insertion order, i.e. age: stop at the first young one.
    for (const [key, since] of this.atRisk) {
      if (nowMs - since <= this.orphanAgeMs) break;
      this.atRisk.delete(key);
      const h = this.held.get(key);
      if (h === undefined) continue;
      this.held.delete(key);
      this.orphanedCount++;
      n++;
      this.abort(h);
    }
    for (const [key, h] of this.held) {
      if (nowMs - h.sinceMs <= this.options.maxAgeMs) break;
      this.held.delete(key);
      this.atRisk.delete(key);
      this.expiredCount++;
      n++;
      this.abort(h);
    }
    return n;
  }

  /** Arms the periodic sweep. Idempotent. */
  start(): void {
    if (this.timer !== undefined) return;
    const shortest = this.logWaitMs > 0 ? Math.min(this.orphanAgeMs, this.logWaitMs) : this.orphanAgeMs;
    const everyMs = Math.min(5_000, Math.max(50, shortest / 4));
    this.timer = setInterval(() => this.sweep(), everyMs);
    this.timer.unref();
  }

  /** Stops the sweep and finishes every held ticket as aborted (the router is going away). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    for (const h of this.held.values()) h.ticket.finish({ aborted: true });
    this.held.clear();
    this.atRisk.clear();
    this.awaiting.clear();
  }

  private abort(h: Held): void {
    this.stats.streamError('ABORTED');
    h.ticket.finish({ aborted: true });
  }
}
