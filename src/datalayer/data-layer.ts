/**
 * The data layer: what the router knows about the engines' load beyond its own in-flight
 * counts, kept outside the scheduling profiles and wired once at the composition root.
 *
 *  - engine metrics: the /metrics poller (when `engineMetrics.enabled`) and the staleness
 *    rules that merge scraped numbers with the router's own accounting;
 *  - token load: the per-engine pending-token estimate (uncached prefill + expected decode)
 *    and the learned output length per model;
 *  - traffic statistics: reuse rate, hottest prefix share, predicted vs confirmed hits.
 *
 * Why outside the profiles: these are facts about the fleet, not routing policy. Every
 * profile (and the profile handler choosing between them) reads the same numbers, and a
 * plugin graph can change without losing or duplicating a poller. The load figures reach
 * plugins inside each candidate's LoadSnapshot (registry load sources, in registration
 * order: engine metrics, then token load, then fleet sources such as the other router
 * replicas' load, src/replication/peer-load.ts); the rest through the handle's SignalView.
 */
import { EngineMetricsPoller, type PollerStats } from '../endpoints/engine-metrics-poller.js';
import { EngineSignalStore, type SampleListener, type ScrapeStats } from '../endpoints/engine-metrics-store.js';
import type { EndpointRegistry, LoadSource } from '../endpoints/registry.js';
import { StalenessTracker, type FallbackReason, type StalenessStats } from '../endpoints/staleness.js';
import type { Logger } from '../logging/logger.js';
import type { Plugin } from '../framework/types.js';
import type { Clock } from '../util/clock.js';
import { EngineMetricsSource } from './engine-metrics-source.js';
import type { SignalView } from '../framework/signal-view.js';
import { OutputLengthLearner, TokenLoadModel, type OutputLengthStat } from './token-load-model.js';
import { TokenLoadSource } from './token-load-source.js';
import type { TrafficSnapshot } from '../framework/signal-view.js';
import { TrafficStats } from './traffic-stats.js';
import { TrafficStatsRecorder } from './traffic-stats-recorder.js';

export interface EngineMetricsOptions {
  /** Poll engines' /metrics; off = router-side accounting only. */
  readonly enabled: boolean;
  readonly pollIntervalMs: number;
  /** Longest spacing of an idle engine's scrapes (EngineMetricsPoller idle backoff). */
  readonly idlePollIntervalMs: number;
  readonly timeoutMs: number;
  /** Engine signals older than this are not trusted (router-side accounting is used). */
  readonly staleAfterMs: number;
  readonly maxConcurrency: number;
  /** Share of an engine's time scrapes may take (EngineMetricsPoller); absent = no limit. */
  readonly maxScrapeShare?: number;
  readonly frozenAfterCompletions: number;
  readonly unobservedHalfLifeMs: number;
}

export interface DataLayerOptions {
  readonly engineMetrics: EngineMetricsOptions;
  readonly tokenLoad: {
    /** Expected output tokens before any response was observed. */
    readonly outputTokensPrior: number;
    /** EWMA weight of a new observation. */
    readonly outputTokensAlpha: number;
  };
  readonly traffic: {
    /** Sliding window of the statistics. */
    readonly windowMs: number;
    /** Leading prompt characters that identify a prefix group, and the minimum to group at all. */
    readonly keyChars: number;
    readonly minKeyChars: number;
  };
}

export interface DataLayerStats {
  readonly scrapes?: readonly ScrapeStats[];
  readonly poller?: PollerStats;
  readonly staleness?: StalenessStats;
  readonly outputLength: readonly OutputLengthStat[];
  readonly traffic: TrafficSnapshot;
}

export class DataLayer {
  readonly store: EngineSignalStore | undefined;
  readonly staleness: StalenessTracker | undefined;
  readonly tokenLoad: TokenLoadModel;
  readonly traffic: TrafficStats;
  /** What plugins see through their handle. */
  readonly signals: SignalView;
  private readonly engine: EngineMetricsSource | undefined;
  private readonly sources: readonly Plugin[];
  private fallbackListener: ((endpointId: string, reason: FallbackReason) => void) | undefined;

  constructor(
    readonly options: DataLayerOptions,
    registry: EndpointRegistry,
    clock: Clock,
    logger: Logger,
    /** Load sources applied last (other router replicas' contributions), after the token load. */
    fleetSources: readonly LoadSource[] = [],
  ) {
    const em = options.engineMetrics;
    const sources: Plugin[] = [];
    if (em.enabled) {
      const store = new EngineSignalStore(clock);
      const staleness = new StalenessTracker(store, clock, {
        staleAfterMs: em.staleAfterMs,
        frozenAfterCompletions: em.frozenAfterCompletions,
        unobservedHalfLifeMs: em.unobservedHalfLifeMs,
        onFallback: (id, reason) => this.fallbackListener?.(id, reason),
      });
      let source: EngineMetricsSource | undefined;
      const poller = new EngineMetricsPoller(store, () => source?.scrapeTargets() ?? [], {
        intervalMs: em.pollIntervalMs,
        // Capped at half the staleness window: an idle engine's reading stays trusted.
        idleIntervalMs: Math.max(em.pollIntervalMs, Math.min(em.idlePollIntervalMs, Math.floor(em.staleAfterMs / 2))),
        timeoutMs: em.timeoutMs,
        maxConcurrency: em.maxConcurrency,
        ...(em.maxScrapeShare !== undefined ? { maxScrapeShare: em.maxScrapeShare } : {}),
        clock,
        logger: logger.child({ component: 'engine-metrics' }),
      });
      source = new EngineMetricsSource(store, staleness, poller, registry.all());
      registry.addLoadSource(source);
      sources.push(source);
      this.store = store;
      this.staleness = staleness;
      this.engine = source;
    } else {
      this.store = undefined;
      this.staleness = undefined;
      this.engine = undefined;
    }
    const tl = options.tokenLoad;
    this.tokenLoad = new TokenLoadModel(
      new OutputLengthLearner({ priorTokens: tl.outputTokensPrior, alpha: tl.outputTokensAlpha, maxModels: 256 }),
    );
    const tokenSource = new TokenLoadSource(this.tokenLoad);
    registry.addLoadSource(tokenSource);
    sources.push(tokenSource);
    for (const f of fleetSources) registry.addLoadSource(f);
    const t = options.traffic;
    this.traffic = new TrafficStats(clock, { windowMs: t.windowMs, buckets: 12, maxSeenKeys: 50_000, maxKeysPerBucket: 4096 });
    sources.push(new TrafficStatsRecorder(this.traffic, t.keyChars, t.minKeyChars));
    this.sources = sources;

    const learner = this.tokenLoad.learner;
    const store = this.store;
    this.signals = {
      maxMetricsAgeMs: em.staleAfterMs,
      expectedOutputTokens: (model, maxTokens) => learner.expected(model, maxTokens),
      traffic: () => this.traffic.snapshot(),
      ...(store !== undefined ? { onEngineSample: (l: SampleListener) => store.subscribe(l) } : {}),
    };
  }

  /**
   * The request-lifecycle observers the scheduler runs after the plugins' hooks; the
   * scheduler also starts and stops them with itself (the poller).
   */
  observers(): readonly Plugin[] {
    return this.sources;
  }

  /** Metric hook for staleness fallbacks (telemetry); replaces the previous one. */
  onFallback(listener: (endpointId: string, reason: FallbackReason) => void): void {
    this.fallbackListener = listener;
  }

  stats(): DataLayerStats {
    const poller = this.engine?.pollerStats();
    return {
      ...(this.store !== undefined ? { scrapes: this.store.stats() } : {}),
      ...(poller !== undefined ? { poller } : {}),
      ...(this.staleness !== undefined ? { staleness: this.staleness.stats() } : {}),
      outputLength: this.tokenLoad.learner.stats(),
      traffic: this.traffic.snapshot(),
    };
  }
}
