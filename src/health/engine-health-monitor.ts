/**
 * Engine health for the scheduler: runs the active checker, feeds passive evidence (request
 * outcomes, metric scrapes) into the EngineHealthTracker, publishes the verdict as
 * `LoadSnapshot.healthy` (a LoadSource, so the health filter every profile starts with drops
 * ejected engines), and reports restarts so the caller can forget the engine's index entries.
 *
 * Passive evidence from an outcome (what Envoy showed the router on the response path):
 *  - served by another engine than the one picked: the pick failed its attempt (connect
 *    failure or retriable 5xx; Envoy retried on the fallback list) → failure of the pick;
 *  - a 5xx status → failure of the engine that served; any other status → success;
 *  - aborted without a status (client gone) → no evidence.
 * Scrapes: a good scrape is a success (and is checked for a restart); a failed one counts
 * when it failed to connect or timed out ("http 404" says the process is alive). An engine
 * whose scrape succeeded within the last check interval, with no scrape failure since and
 * every active check passed, has its active check left out (at most 3 in a row): the scrape
 * already showed the process answering, and each HTTP exchange costs the router CPU.
 */
import type { Endpoint, RequestOutcome, RouteDecision } from '../core/types.js';
import type { EngineSignalStore } from '../endpoints/engine-metrics-store.js';
import type { LoadSnapshot, MutableLoadSnapshot } from '../endpoints/load.js';
import type { LoadSource } from '../endpoints/registry.js';
import type { Logger } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import type { Clock } from '../util/clock.js';
import { ActiveHealthChecker, type HealthTarget } from './active-health-checker.js';
import { EngineHealthTracker, type EngineHealthView } from './engine-health-tracker.js';
import type { HealthConfig } from './health-config.js';
import { RestartDetector } from './restart-detector.js';
import { formatHostPort } from '../util/host-port.js';

export interface EngineHealthMonitorDeps {
  readonly config: HealthConfig;
  /** The current fleet. */
  readonly endpoints: () => readonly Endpoint[];
  readonly clock: Clock;
  readonly logger: Logger;
  /** Engine metric samples and scrape errors (absent: no scrape evidence, no counter-based restart detection). */
  readonly store?: EngineSignalStore;
  /** An engine restarted: forget what the router believes it caches. */
  readonly onRestart?: (endpoint: Endpoint, reason: string) => void;
}

export interface EngineHealthStats {
  readonly ejections: number;
  readonly readmissions: number;
  readonly restarts: number;
  /** Active checks left out because a scrape had just answered. */
  readonly skippedChecks: number;
  readonly endpoints: readonly EngineHealthView[];
}

export class EngineHealthMonitor implements LoadSource {
  readonly name = 'engine-health';
  readonly tracker: EngineHealthTracker;
  private readonly checker: ActiveHealthChecker | undefined;
  private readonly restarts = new RestartDetector();
  private readonly log: RateLimitedLog;
  private readonly scrapeErrorsSeen = new Map<string, number>();
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ejections = 0;
  private readmissions = 0;
  private restartCount = 0;

  constructor(private readonly deps: EngineHealthMonitorDeps) {
    const c = deps.config;
    this.log = new RateLimitedLog({ clock: deps.clock, burst: 20 });
    this.tracker = new EngineHealthTracker({
      clock: deps.clock,
      unhealthyThreshold: c.active.unhealthyThreshold,
      healthyThreshold: c.active.healthyThreshold,
      consecutiveFailures: c.passive.consecutiveFailures,
      baseEjectionMs: c.ejection.baseMs,
      maxEjectionMs: c.ejection.maxMs,
      onDown: (id, reason, detail) => {
        this.ejections++;
        this.log.log(`down:${id}`, (extra) =>
          deps.logger.warn('engine taken out of routing', { endpoint: id, evidence: reason, reason: detail, ...extra }),
        );
      },
      onUp: (id, how) => {
        this.readmissions++;
        this.log.log(`up:${id}`, (extra) => deps.logger.info('engine back in routing', { endpoint: id, how, ...extra }));
      },
      onRestart: (id, reason) => {
        // A new process: its next scrape is a new baseline, not a second restart.
        this.restarts.reset(id);
        this.restarted(id, reason);
      },
    });
    if (c.active.enabled) {
      this.checker = new ActiveHealthChecker(() => this.targets(), {
        intervalMs: c.active.intervalMs,
        timeoutMs: c.active.timeoutMs,
        onResult: (id, result, detail) => this.tracker.recordActive(id, result, detail),
        ...(deps.store !== undefined ? { skip: (id: string) => this.scrapeVouches(id) } : {}),
      });
    }
  }

  /** Starts checks and evidence collection; aborting `signal` stops them. */
  start(signal?: AbortSignal): void {
    if (this.timer !== undefined) return;
    this.checker?.start(signal);
    const store = this.deps.store;
    if (store !== undefined) {
      this.unsubscribe = store.subscribe((id, sample) => {
        this.tracker.recordSuccess(id, 'scrape');
        const reason = this.restarts.observe(id, sample.signals);
        if (reason !== undefined) this.restarted(id, reason);
      });
    }
    const everyMs = Math.max(50, Math.min(250, this.deps.config.active.intervalMs));
    this.timer = setInterval(() => this.tick(), everyMs);
    this.timer.unref();
    signal?.addEventListener('abort', () => this.stop(), { once: true });
  }

  stop(): void {
    this.checker?.stop();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Scrape-failure evidence and time-driven transitions (ejection ends); called by the timer. */
  tick(): void {
    const store = this.deps.store;
    if (store !== undefined && this.deps.config.passive.enabled) {
      for (const s of store.stats()) {
        const seen = this.scrapeErrorsSeen.get(s.endpointId) ?? 0;
        this.scrapeErrorsSeen.set(s.endpointId, s.errors);
        const fresh = Math.min(s.errors - seen, s.consecutiveErrors);
        if (fresh <= 0 || s.lastError === undefined || s.lastError.startsWith('http ')) continue;
        for (let k = 0; k < fresh; k++) this.tracker.recordFailure(s.endpointId, 'scrape', s.lastError);
      }
    }
    this.tracker.tick();
  }

  /** A routed request ended (CompletedHook shape). */
  onCompleted(_request: unknown, decision: RouteDecision, outcome: RequestOutcome): void {
    if (!this.deps.config.passive.enabled) return;
    const picked = decision.endpoint.id;
    const served = outcome.servedBy;
    if (served !== undefined && served !== '' && served !== picked) {
      this.tracker.recordFailure(picked, 'connect-failure', `Envoy retried on ${served}`);
    }
    const target = served !== undefined && served !== '' ? served : picked;
    if (outcome.status === undefined) return;
    if (outcome.status >= 500) this.tracker.recordFailure(target, 'http-5xx', `status ${outcome.status}`);
    else this.tracker.recordSuccess(target, 'response');
  }

  enrich(endpoint: Endpoint, base: LoadSnapshot, nowMs: number): LoadSnapshot {
    if (!base.healthy || this.tracker.isRoutable(endpoint.id, nowMs)) return base;
    return { ...base, healthy: false };
  }

  enrichInPlace(endpoint: Endpoint, snap: MutableLoadSnapshot, nowMs: number): void {
    if (snap.healthy && !this.tracker.isRoutable(endpoint.id, nowMs)) snap.healthy = false;
  }

  /** Forgets engines no longer in the fleet. */
  retain(ids: readonly string[]): void {
    this.tracker.retain(ids);
    this.restarts.retain(ids);
    const keep = new Set(ids);
    for (const id of [...this.scrapeErrorsSeen.keys()]) if (!keep.has(id)) this.scrapeErrorsSeen.delete(id);
  }

  stats(): EngineHealthStats {
    return {
      skippedChecks: this.checker?.skippedChecks ?? 0,
      ejections: this.ejections,
      readmissions: this.readmissions,
      restarts: this.restartCount,
      endpoints: this.deps.endpoints().map((e) => this.tracker.view(e.id)),
    };
  }

  /**
   * Whether the engine's active check may be left out this tick: a good scrape within the
   * last check interval, no scrape failure since, and no failed active check.
   */
  scrapeVouches(id: string): boolean {
    const store = this.deps.store;
    const sample = store?.get(id);
    if (store === undefined || sample === undefined || store.consecutiveErrors(id) > 0) return false;
    if (this.deps.clock.nowMs() - sample.scrapedAtMs > this.deps.config.active.intervalMs) return false;
    return this.tracker.activeSettled(id);
  }

  private targets(): HealthTarget[] {
    const path = this.deps.config.active.path;
    return this.deps.endpoints().map((e) => ({
      endpointId: e.id,
      url: `http://${formatHostPort(e.address, e.port)}${path}`,
    }));
  }

  private restarted(id: string, reason: string): void {
    this.restartCount++;
    const ep = this.deps.endpoints().find((e) => e.id === id);
    this.log.log(`restart:${id}`, (extra) => this.deps.logger.warn('engine restarted', { endpoint: id, reason, ...extra }));
    if (ep !== undefined && this.deps.config.clearIndexOnRestart) this.deps.onRestart?.(ep, reason);
  }
}
