/**
 * Per-scheduler services of the load-signal plugins, by typed key, so the plugins that
 * produce a signal (engine metrics poller, token-load model, traffic statistics) and the
 * plugins and telemetry that read it share one instance. Telemetry reaches them through
 * `Scheduler.service(KEY)` or the `loadSignalStats` accessor.
 */
import { loadConfigOf } from '../config/sections/load.js';
import type { RouterConfig } from '../config/types.js';
import { EngineSignalStore } from '../endpoints/engine-metrics-store.js';
import { OutputLengthLearner, TokenLoadModel } from '../endpoints/load-model.js';
import { StalenessTracker } from '../endpoints/staleness.js';
import type { FallbackReason } from '../endpoints/staleness.js';
import { serviceKey, type PluginContext } from '../scheduling/plugin-registry.js';
import { TrafficStats } from '../scheduling/traffic-stats.js';
import type { LoadMeasure } from './shared/load-units.js';

export const ENGINE_SIGNAL_STORE = serviceKey<EngineSignalStore>('engine-signal-store');
export const STALENESS_TRACKER = serviceKey<StalenessTracker>('staleness-tracker');
export const TOKEN_LOAD_MODEL = serviceKey<TokenLoadModel>('token-load-model');
export const TRAFFIC_STATS = serviceKey<TrafficStats>('traffic-stats');

/** Metric hook for staleness fallbacks; telemetry may replace the no-op (set before start). */
export interface StalenessHooks {
  onFallback: (endpointId: string, reason: FallbackReason) => void;
}
export const STALENESS_HOOKS = serviceKey<StalenessHooks>('staleness-hooks');

export function sharedSignalStore(ctx: PluginContext): EngineSignalStore {
  return ctx.shared(ENGINE_SIGNAL_STORE, () => new EngineSignalStore(ctx.clock));
}

export function sharedStalenessHooks(ctx: PluginContext): StalenessHooks {
  return ctx.shared(STALENESS_HOOKS, () => ({ onFallback: () => {} }));
}

export function sharedStaleness(ctx: PluginContext): StalenessTracker {
  return ctx.shared(STALENESS_TRACKER, () => {
    const hooks = sharedStalenessHooks(ctx);
    const em = ctx.config.engineMetrics;
    return new StalenessTracker(sharedSignalStore(ctx), ctx.clock, {
      staleAfterMs: em.staleAfterMs,
      frozenAfterCompletions: em.frozenAfterCompletions ?? 3,
      unobservedHalfLifeMs: em.unobservedHalfLifeMs ?? 1000,
      onFallback: (id, reason) => hooks.onFallback(id, reason),
    });
  });
}

export function sharedTokenLoadModel(ctx: PluginContext): TokenLoadModel {
  return ctx.shared(TOKEN_LOAD_MODEL, () => {
    const l = loadConfigOf(ctx.config);
    return new TokenLoadModel(new OutputLengthLearner({ priorTokens: l.outputTokensPrior, alpha: l.outputTokensAlpha, maxModels: 256 }));
  });
}

export function sharedTrafficStats(ctx: PluginContext): TrafficStats {
  return ctx.shared(TRAFFIC_STATS, () => {
    const windowMs = loadConfigOf(ctx.config).trafficWindowMs;
    return new TrafficStats(ctx.clock, { windowMs, buckets: 12, maxSeenKeys: 50_000, maxKeysPerBucket: 4096 });
  });
}

/** The load measure every load-aware plugin uses unless its params override the unit. */
export function loadMeasureOf(config: RouterConfig, unit?: LoadMeasure['unit']): LoadMeasure {
  const l = loadConfigOf(config);
  return { unit: unit ?? l.unit, tokensPerRequest: l.tokensPerRequest, maxMetricsAgeMs: config.engineMetrics.staleAfterMs };
}

/** Characters that identify a prefix group; groups need at least one full block. */
export function prefixGroupKeyChars(config: RouterConfig): { keyChars: number; minKeyChars: number } {
  return { keyChars: loadConfigOf(config).hotspot.keyChars, minKeyChars: config.cacheAware.blockChars };
}
