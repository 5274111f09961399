/**
 * Engine-metrics source of the data layer: runs the /metrics poller for the router's
 * lifetime and feeds its signals into every load snapshot through the staleness rules.
 *
 * The staleness rules need the router's own routed/completed counts per endpoint, which
 * the request-lifecycle hooks provide; registering as a LoadSource on the endpoint registry
 * makes the merged numbers visible to every scorer and filter (queue scorer, imbalance
 * escape, hotspot, …) without them knowing about scrapes.
 *
 * The load source fills waiting / running / kvUsage / metricsAgeMs of the snapshot from
 * StalenessTracker.merge: engine numbers moved forward by what the router did since the
 * scrape, faded by age, dropped (router accounting only, fallback counted) when stale.
 */
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import type { EngineMetricsPoller, PollerStats, ScrapeTarget } from '../endpoints/engine-metrics-poller.js';
import type { EngineSignalStore } from '../endpoints/engine-metrics-store.js';
import type { LoadSnapshot, MutableLoadSnapshot } from '../endpoints/load.js';
import type { LoadSlot, LoadSource } from '../endpoints/registry.js';
import { newMergedLoad, type MutableMergedLoad, type StalenessMarks, type StalenessTracker } from '../endpoints/staleness.js';
import type { CompletedHook, CycleState, EndpointsChangedHook, RoutedHook } from '../framework/types.js';

export class EngineMetricsSource implements RoutedHook, CompletedHook, EndpointsChangedHook, LoadSource {
  /** Reused by enrichInPlace (read immediately, never kept). */
  private readonly scratch = newMergedLoad();
  readonly name = 'engine-metrics';
  private targets: ScrapeTarget[] = [];
  /** Staleness state per endpoint index (enrichAllInPlace), re-read when the id or liveness changed. */
  private marks: (StalenessMarks | undefined)[] = [];

  constructor(
    readonly store: EngineSignalStore,
    readonly staleness: StalenessTracker,
    readonly poller: EngineMetricsPoller | undefined,
    endpoints: readonly Endpoint[],
  ) {
    this.onEndpointsChanged(endpoints);
  }

  start(signal: AbortSignal): void {
    this.poller?.start(signal);
  }

  async stop(): Promise<void> {
    await this.poller?.stop();
    this.staleness.close();
  }

  /** Endpoints with a metrics URL, as scrape targets. */
  scrapeTargets(): readonly ScrapeTarget[] {
    return this.targets;
  }

  pollerStats(): PollerStats | undefined {
    return this.poller?.stats();
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.targets = endpoints.filter((e) => e.metricsUrl !== undefined).map((e) => ({ endpointId: e.id, url: e.metricsUrl as string }));
    const ids = endpoints.map((e) => e.id);
    this.store.retain(ids);
    this.staleness.retain(ids);
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    // KV the request will take on the engine: its prompt minus what the prefix plugin predicts cached.
    const r = state.request;
    const cached = r.promptChars > 0 ? Math.min(1, (decision.matchedChars ?? 0) / r.promptChars) : 0;
    this.staleness.onRouted(decision.endpoint.id, decision.requestId, state.nowMs, r.promptTokens * (1 - cached));
    this.poller?.touch(decision.endpoint.id);
  }

  onCompleted(request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void {
    // Usage in the outcome means the edge saw the whole response: the request has left the engine.
    const observed = outcome.completionTokens !== undefined || outcome.cachedTokens !== undefined;
    this.staleness.onCompleted(decision.endpoint.id, request.requestId, observed);
    this.poller?.touch(decision.endpoint.id);
  }

  enrich(endpoint: Endpoint, base: LoadSnapshot): LoadSnapshot {
    const m = this.staleness.merge(endpoint.id, base.inflightRequests);
    if (m.fallback !== undefined && base.metricsAgeMs === m.metricsAgeMs) return base;
    const out: { -readonly [K in keyof LoadSnapshot]: LoadSnapshot[K] } = { ...base, metricsAgeMs: m.metricsAgeMs };
    if (m.waiting !== undefined) out.waiting = m.waiting;
    if (m.running !== undefined) out.running = m.running;
    if (m.kvUsage !== undefined) out.kvUsage = m.kvUsage;
    return out;
  }

  enrichInPlace(endpoint: Endpoint, snap: MutableLoadSnapshot, nowMs: number): void {
    apply(this.staleness.mergeInto(endpoint.id, snap.inflightRequests, this.scratch, nowMs), snap);
  }

  /** enrichInPlace over every slot in one staleness loop, its state kept per endpoint index (no lookup by id). */
  enrichAllInPlace(slots: readonly LoadSlot[], nowMs: number): void {
    this.staleness.mergeAllInto(slots, this.marks, nowMs);
  }
}

/** The merged engine load written into the snapshot (a fallback that changes nothing leaves it). */
function apply(m: MutableMergedLoad, snap: MutableLoadSnapshot): void {
  if (m.fallback !== undefined && snap.metricsAgeMs === m.metricsAgeMs) return;
  snap.metricsAgeMs = m.metricsAgeMs;
  if (m.waiting !== undefined) snap.waiting = m.waiting;
  if (m.running !== undefined) snap.running = m.running;
  if (m.kvUsage !== undefined) snap.kvUsage = m.kvUsage;
}
