/**
 * Routed requests whose response the router does not watch itself: when Envoy reports
 * response completion through its gRPC access log (access-log-receiver.ts) instead of
 * streaming the response through ext_proc, the stream handler hands each ticket over here
 * at the decision, under a router-made key that travels in the decision's dynamic metadata
 * (`cacheroute.ticket`; clients cannot set metadata, so they cannot end someone else's
 * request). The access log entry of that request finishes it.
 *
 * Why a key of our own: x-request-id is kept from internal clients, so it may repeat.
 * Why an age limit: an entry can be lost (Envoy's access log is lossy by design, e.g. while
 * its stream reconnects); a ticket older than `maxAgeMs` (the longest response Envoy allows)
 * is finished as aborted, so nothing stays counted in flight forever.
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
  readonly stats?: EdgeStats;
  /** Key prefix (default: 8 random hex digits, distinct per router process). */
  readonly prefix?: string;
}

interface Held {
  readonly ticket: RouteTicket;
  readonly sinceMs: number;
}

export interface PendingResponsesStats {
  readonly pending: number;
  readonly completed: number;
  readonly expired: number;
  /** Completions naming a key this router does not hold (another replica's, or finished). */
  readonly unknown: number;
}

export class PendingResponses {
  private readonly held = new Map<string, Held>();
  private readonly prefix: string;
  private readonly stats: EdgeStats;
  private seq = 0;
  private completedCount = 0;
  private expiredCount = 0;
  private unknownCount = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PendingResponsesOptions) {
    this.prefix = options.prefix ?? randomBytes(4).toString('hex');
    this.stats = options.stats ?? noopEdgeStats;
  }

  /** Takes over `ticket`; returns the key its completion report must name. */
  hold(ticket: RouteTicket): string {
    const key = `${this.prefix}-${(this.seq++).toString(36)}`;
    this.held.set(key, { ticket, sinceMs: this.options.clock.nowMs() });
    return key;
  }

  /** Finishes the ticket held under `key`. Returns false if none is (unknown or already finished). */
  complete(key: string, outcome: RequestOutcome): boolean {
    const h = this.held.get(key);
    if (h === undefined) {
      this.unknownCount++;
      return false;
    }
    this.held.delete(key);
    this.completedCount++;
    if (outcome.aborted) this.stats.streamError('ABORTED');
    h.ticket.finish(outcome);
    return true;
  }

  /** Tickets held now. */
  get size(): number {
    return this.held.size;
  }

  snapshot(): PendingResponsesStats {
    return { pending: this.held.size, completed: this.completedCount, expired: this.expiredCount, unknown: this.unknownCount };
  }

  /** Finishes, as aborted, every ticket held longer than maxAgeMs. Returns how many. */
  sweep(nowMs: number = this.options.clock.nowMs()): number {
    let n = 0;
    // Map iteration follows insertion order, i.e. age: stop at the first young one.
    for (const [key, h] of this.held) {
      if (nowMs - h.sinceMs <= this.options.maxAgeMs) break;
      this.held.delete(key);
      n++;
      this.stats.streamError('ABORTED');
      h.ticket.finish({ aborted: true });
    }
    this.expiredCount += n;
    return n;
  }

  /** Arms the periodic sweep. Idempotent. */
  start(): void {
    if (this.timer !== undefined) return;
    const everyMs = Math.min(5_000, Math.max(50, this.options.maxAgeMs / 4));
    this.timer = setInterval(() => this.sweep(), everyMs);
    this.timer.unref();
  }

  /** Stops the sweep and finishes every held ticket as aborted (the router is going away). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    for (const h of this.held.values()) h.ticket.finish({ aborted: true });
    this.held.clear();
  }
}
