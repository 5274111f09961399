/**
 * The profile each built-in `strategy:` name stands for. Later strategies (bounded-load
 * hashing, power-of-two, auto) add their builder here and register it in registerBuiltins.
 *
 * Every profile starts with the eligibility filters (model/subset, then health), so no
 * strategy can route outside Envoy's subset hint or to an endpoint known to be down.
 */
import { DEFAULT_COLD_ROUTING, DEFAULT_COLD_SPREAD, DEFAULT_QUEUE_SIGNAL } from '../config/defaults.js';
import type { RouterConfig } from '../config/types.js';
import type { ProfileSpec } from '../scheduling/profile-spec.js';
import { HEALTH_FILTER } from './filter/health-filter.js';
import { IMBALANCE_ESCAPE_FILTER } from './filter/imbalance-escape-filter.js';
import { MODEL_SUBSET_FILTER } from './filter/model-subset-filter.js';
import { PRECISE_PREFIX_CACHE_PLUGIN } from './multi/precise-prefix-cache-plugin.js';
import { PREFIX_CACHE_PLUGIN } from './multi/prefix-cache-plugin.js';
import { MAX_SCORE_PICKER } from './picker/max-score-picker.js';
import { PREFIX_HASH_PICKER } from './picker/prefix-hash-picker.js';
import { RANDOM_PICKER } from './picker/random-picker.js';
import { ROUND_ROBIN_PICKER } from './picker/round-robin-picker.js';
import { KV_USAGE_SCORER } from './scorer/kv-usage-scorer.js';
import { QUEUE_SCORER } from './scorer/queue-scorer.js';
import { hotspotPlugins, loadScorerPlugins, loadSignalPlugins } from './load-strategies.js';

const ELIGIBILITY = [{ type: MODEL_SUBSET_FILTER }, { type: HEALTH_FILTER }] as const;

/** Load-signal hooks (engine metrics, token load, traffic stats; docs/load-signals.md) when a config is given. */
function signals(config: RouterConfig | undefined, withIndex = false) {
  return config === undefined ? [] : loadSignalPlugins(config, { withIndex });
}

export function roundRobinProfile(config?: RouterConfig): ProfileSpec {
  return { name: 'round-robin', plugins: [...ELIGIBILITY, { type: ROUND_ROBIN_PICKER }, ...signals(config)] };
}

export function randomProfile(config?: RouterConfig): ProfileSpec {
  return { name: 'random', plugins: [...ELIGIBILITY, { type: RANDOM_PICKER }, ...signals(config)] };
}

/** Fewest router-side in-flight requests; ties broken at random. */
export function leastRequestProfile(config?: RouterConfig): ProfileSpec {
  return {
    name: 'least-request',
    plugins: [
      ...ELIGIBILITY,
      { type: QUEUE_SCORER, params: { signal: 'inflight' }, weight: 1 },
      ...(config === undefined ? [] : loadScorerPlugins(config, { tokenLoad: false })),
      { type: MAX_SCORE_PICKER, params: { reason: 'load' } },
      ...signals(config),
    ],
  };
}

export function prefixHashProfile(config?: RouterConfig): ProfileSpec {
  return { name: 'prefix-hash', plugins: [...ELIGIBILITY, { type: PREFIX_HASH_PICKER }, ...signals(config)] };
}

/** Prefix affinity weighed against queue and KV usage, with the imbalance escape. */
export function cacheAwareProfile(config: RouterConfig): ProfileSpec {
  const w = config.cacheAware.weights;
  return {
    name: 'cache-aware',
    plugins: [
      ...ELIGIBILITY,
      ...hotspotPlugins(config),
      { type: IMBALANCE_ESCAPE_FILTER },
      config.cacheAware.preciseIndex !== undefined
        ? { type: PRECISE_PREFIX_CACHE_PLUGIN, name: PREFIX_CACHE_PLUGIN, params: config.cacheAware.preciseIndex, weight: w.prefix }
        : { type: PREFIX_CACHE_PLUGIN, weight: w.prefix },
      {
        type: QUEUE_SCORER,
        params: { softQueue: config.cacheAware.imbalance.absThreshold, signal: config.cacheAware.queueSignal ?? DEFAULT_QUEUE_SIGNAL },
        weight: w.queue,
      },
      { type: KV_USAGE_SCORER, weight: w.kvUsage },
      ...loadScorerPlugins(config, { tokenLoad: true }),
      { type: MAX_SCORE_PICKER, params: { coldOrder: config.cacheAware.coldRouting ?? DEFAULT_COLD_ROUTING, coldSpread: config.cacheAware.coldSpread ?? DEFAULT_COLD_SPREAD } },
      ...signals(config, true),
    ],
  };
}
