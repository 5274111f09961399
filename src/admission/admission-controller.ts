/**
 * Admission control between the ext_proc edge and the scheduler. A request is routed at
 * once while some eligible engine has room (saturation.ts). When every one is saturated:
 *  - mode `reject`: refused with OVERLOADED (429 + Retry-After);
 *  - mode `queue`: held in a bounded TenantFairQueue until an engine has room — checked
 *    whenever a request admitted here reaches its first byte or finishes, and on a short
 *    timer while anything waits (engine metrics move too) — or until `maxWaitMs` passes
 *    (then 429). A full queue pushes out the newest entry of the tenant holding the most
 *    places (429 for it), unless the newcomer's tenant is that tenant (429 for the newcomer).
 * While requests wait, newcomers queue behind them (no overtaking the fair order).
 *
 * A held request never outlives its stream: the edge aborts the signal when the stream ends
 * and the entry is withdrawn; the wait bound is validated below the edge's request idle
 * timeout, and must stay under Envoy's own timeouts (docs/health-and-admission.md).
 */
import { RouterError } from '../core/errors.js';
import type { AdmissionService, RouteTicket, RoutingService } from '../core/routing-service.js';
import type { RequestOutcome, RouteRequest } from '../core/types.js';
import type { Logger } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import type { Clock } from '../util/clock.js';
import type { AdmissionConfig } from './admission-config.js';
import type { SaturationCheck } from './saturation.js';
import { TenantFairQueue, type QueueEntry } from './tenant-fair-queue.js';

export type RefusalReason = 'saturated' | 'queue-full' | 'deadline' | 'shutdown';
export const REFUSAL_REASONS: readonly RefusalReason[] = ['saturated', 'queue-full', 'deadline', 'shutdown'];

export interface AdmissionControllerOptions {
  readonly routing: RoutingService;
  readonly saturation: SaturationCheck;
  readonly config: AdmissionConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Re-check a non-empty queue this often (default 20 ms); 0 = only on releases and `pump()` (tests). */
  readonly pollMs?: number;
}

export interface AdmissionStats {
  readonly admittedAtOnce: number;
  readonly admittedAfterWait: number;
  readonly refused: Readonly<Record<RefusalReason, number>>;
  readonly withdrawn: number;
  readonly queued: number;
  readonly queuedByTenant: Readonly<Record<string, number>>;
}

interface Held extends QueueEntry {
  readonly request: RouteRequest;
  readonly enqueuedMs: number;
  resolve(t: RouteTicket): void;
  reject(err: RouterError): void;
  detach(): void;
}

const DEFAULT_POLL_MS = 20;

export class AdmissionController implements AdmissionService {
  private readonly queue = new TenantFairQueue<Held>();
  private readonly cfg: AdmissionConfig;
  private readonly pollMs: number;
  private readonly log: RateLimitedLog;
  private timer: NodeJS.Timeout | undefined;
  private pumping = false;
  private stopped = false;
  private atOnce = 0;
  private afterWait = 0;
  private withdrawnCount = 0;
  private readonly refusals: Record<RefusalReason, number> = { saturated: 0, 'queue-full': 0, deadline: 0, shutdown: 0 };
  /** Waiting-time observer (telemetry). */
  onWaited?: (waitMs: number, admitted: boolean) => void;

  constructor(private readonly opts: AdmissionControllerOptions) {
    this.cfg = opts.config;
    this.pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
    this.log = new RateLimitedLog({ clock: opts.clock });
  }

  admit(request: RouteRequest, signal: AbortSignal): RouteTicket | Promise<RouteTicket> {
    if (this.cfg.mode === 'off') return this.opts.routing.route(request);
    if (this.stopped) throw this.refuse('shutdown', 'the router is shutting down');
    const now = this.opts.clock.nowMs();
    if (this.queue.size === 0 && !this.opts.saturation.saturated(request, now)) {
      this.atOnce++;
      return this.route(request);
    }
    if (this.cfg.mode === 'reject') throw this.refuse('saturated', 'every eligible engine is saturated');
    return this.hold(request, signal, now);
  }

  /** Admits what fits now and answers what expired. Called on releases, by the timer, and by tests. */
  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      const now = this.opts.clock.nowMs();
      for (const e of this.queue.takeExpired(now)) {
        e.detach();
        this.onWaited?.(now - e.enqueuedMs, false);
        e.reject(this.refuse('deadline', `no engine had room within ${this.cfg.queue.maxWaitMs} ms`));
      }
      for (let e = this.queue.peek(); e !== undefined; e = this.queue.peek()) {
        if (this.opts.saturation.saturated(e.request, now)) break;
        this.queue.shift();
        e.detach();
        let ticket: RouteTicket;
        try {
          ticket = this.route(e.request);
        } catch (err) {
          e.reject(RouterError.from(err));
          continue;
        }
        this.afterWait++;
        this.onWaited?.(now - e.enqueuedMs, true);
        e.resolve(ticket);
      }
    } finally {
      this.pumping = false;
    }
    this.arm();
  }

  /** Refuses everything held (429) and stops the timer. New requests are refused too. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    for (const e of this.queue.drain()) {
      e.detach();
      e.reject(this.refuse('shutdown', 'the router is shutting down'));
    }
  }

  stats(): AdmissionStats {
    return {
      admittedAtOnce: this.atOnce,
      admittedAfterWait: this.afterWait,
      refused: { ...this.refusals },
      withdrawn: this.withdrawnCount,
      queued: this.queue.size,
      queuedByTenant: Object.fromEntries(this.queue.tenants()),
    };
  }

  private hold(request: RouteRequest, signal: AbortSignal, now: number): Promise<RouteTicket> {
    if (signal.aborted) return Promise.reject(new RouterError('OVERLOADED', 'withdrawn'));
    const tenant = request.tenant ?? '';
    if (this.queue.size >= this.cfg.queue.maxLength) {
      const largest = this.queue.largestTenant();
      const victim =
        largest !== undefined && largest !== tenant && this.queue.tenantSize(largest) > this.queue.tenantSize(tenant) + 1
          ? this.queue.newestOf(largest)
          : undefined;
      if (victim === undefined)
        return Promise.reject(this.refuse('queue-full', `the admission queue is full (${this.cfg.queue.maxLength})`));
      this.queue.remove(victim);
      victim.detach();
      victim.reject(this.refuse('queue-full', 'pushed out of the full admission queue by another tenant'));
    }
    return new Promise<RouteTicket>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.queue.remove(entry)) {
          this.withdrawnCount++;
          reject(new RouterError('OVERLOADED', 'withdrawn: the stream ended while waiting'));
        }
      };
      const entry: Held = {
        tenant,
        priority: request.priority ?? 0,
        deadlineMs: now + this.cfg.queue.maxWaitMs,
        request,
        enqueuedMs: now,
        resolve,
        reject,
        detach: () => signal.removeEventListener('abort', onAbort),
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(entry);
      this.pump();
    });
  }

  /** Routes and wraps the ticket so its release lets the next held request in. */
  private route(request: RouteRequest): RouteTicket {
    return new AdmittedTicket(this.opts.routing.route(request), this);
  }

  /** A request admitted here freed its prefill slot or finished. */
  released(): void {
    if (this.queue.size > 0) this.pump();
  }

  private arm(): void {
    if (this.queue.size === 0 || this.pollMs <= 0 || this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, this.pollMs);
    this.timer.unref();
  }

  private refuse(reason: RefusalReason, message: string): RouterError {
    this.refusals[reason]++;
    this.log.log(`refused:${reason}`, (extra) =>
      this.opts.logger.info('request refused by admission control', { reason, queued: this.queue.size, ...extra }),
    );
    return new RouterError('OVERLOADED', message, { retryAfterMs: this.cfg.retryAfterMs });
  }
}

/** A ticket that tells admission control when its request stops taking prefill room. */
class AdmittedTicket implements RouteTicket {
  constructor(
    private readonly inner: RouteTicket,
    private readonly owner: AdmissionController,
  ) {}

  get request(): RouteRequest {
    return this.inner.request;
  }

  get decision() {
    return this.inner.decision;
  }

  finish(outcome: RequestOutcome): void {
    this.inner.finish(outcome);
    this.owner.released();
  }

  firstByte(): void {
    this.inner.firstByte?.();
    this.owner.released();
  }
}
