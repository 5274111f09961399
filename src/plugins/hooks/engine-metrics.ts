/**
 * Engine-metrics plugin: runs the /metrics poller for the scheduler's lifetime and feeds
 * its signals into every load snapshot through the staleness rules.
 *
 * Why a plugin: the poller needs the scheduler's lifecycle (start with its AbortSignal,
 * stop on shutdown) and the staleness rules need the router's own routed/completed counts
 * per endpoint, which the routed and completed hooks provide; registering a LoadSource on
 * the endpoint registry makes the merged numbers visible to every scorer and filter
 * (queue scorer, imbalance escape, hotspot, …) without them knowing about scrapes.
 *
 * The load source fills waiting / running / kvUsage / metricsAgeMs of the snapshot from
 * StalenessTracker.merge: engine numbers moved forward by what the router did since the
 * scrape, faded by age, dropped (router accounting only, fallback counted) when stale.
 */
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../core/types.js';
import { EngineMetricsPoller } from '../../endpoints/engine-metrics-poller.js';
import type { PollerStats, ScrapeTarget } from '../../endpoints/engine-metrics-poller.js';
import type { EngineSignalStore } from '../../endpoints/engine-metrics-store.js';
import type { LoadSnapshot, MutableLoadSnapshot } from '../../endpoints/load.js';
import type { LoadSource } from '../../endpoints/registry.js';
import type { StalenessTracker } from '../../endpoints/staleness.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { LifecyclePlugin } from '../../scheduling/profile-spec.js';
import type { CompletedHook, CycleState, EndpointsChangedHook, RoutedHook } from '../../scheduling/types.js';
import { sharedSignalStore, sharedStaleness } from '../load-signal-services.js';
import { params } from '../plugin-params.js';

export const ENGINE_METRICS_PLUGIN = 'engine-metrics';

export class EngineMetricsPlugin implements RoutedHook, CompletedHook, EndpointsChangedHook, LifecyclePlugin, LoadSource {
  private targets: ScrapeTarget[] = [];

  constructor(
    readonly name: string,
    readonly store: EngineSignalStore,
    readonly staleness: StalenessTracker,
    readonly poller: EngineMetricsPoller | undefined,
    endpoints: readonly Endpoint[],
    /** Prefix block size in characters, to turn a decision's matched blocks into cached tokens. */
    private readonly blockChars: number,
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
    // KV the request will take on the engine: its prompt minus what the index predicts cached.
    const r = state.request;
    const cached = r.promptChars > 0 ? Math.min(1, (decision.matchedBlocks * this.blockChars) / r.promptChars) : 0;
    this.staleness.onRouted(decision.endpoint.id, decision.requestId, state.nowMs, r.promptTokens * (1 - cached));
  }

  onCompleted(request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void {
    // Usage in the outcome means the edge saw the whole response: the request has left the engine.
    const observed = outcome.completionTokens !== undefined || outcome.cachedTokens !== undefined;
    this.staleness.onCompleted(decision.endpoint.id, request.requestId, observed);
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

  enrichInPlace(endpoint: Endpoint, snap: MutableLoadSnapshot): void {
    const m = this.staleness.merge(endpoint.id, snap.inflightRequests);
    if (m.fallback !== undefined && snap.metricsAgeMs === m.metricsAgeMs) return;
    snap.metricsAgeMs = m.metricsAgeMs;
    if (m.waiting !== undefined) snap.waiting = m.waiting;
    if (m.running !== undefined) snap.running = m.running;
    if (m.kvUsage !== undefined) snap.kvUsage = m.kvUsage;
  }
}

/**
 * Params: `poll` (default true; false = merge signals others put in the store, no scraping).
 * Interval, timeout, concurrency and staleness come from the `engineMetrics` config section.
 */
export const engineMetricsPluginFactory: PluginFactory = (name, p, ctx) => {
  const poll = params(name, p).only('poll').boolean('poll', true);
  const em = ctx.config.engineMetrics;
  const store = sharedSignalStore(ctx);
  const staleness = sharedStaleness(ctx);
  let plugin: EngineMetricsPlugin | undefined;
  const poller = poll
    ? new EngineMetricsPoller(store, () => plugin?.scrapeTargets() ?? [], {
        intervalMs: em.pollIntervalMs,
        timeoutMs: em.timeoutMs,
        maxConcurrency: em.maxConcurrency ?? 16,
        clock: ctx.clock,
        logger: ctx.logger,
      })
    : undefined;
  plugin = new EngineMetricsPlugin(name, store, staleness, poller, ctx.endpoints.all(), ctx.config.cacheAware.blockChars);
  ctx.endpoints.addLoadSource(plugin);
  return plugin;
};
