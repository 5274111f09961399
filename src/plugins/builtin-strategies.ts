/**
 * The profile each built-in `strategy:` name stands for. Later strategies (bounded-load
 * hashing, power-of-two, auto) add their builder here and register it in registerBuiltins.
 *
 * Every profile starts with the eligibility filters (model/subset, then health), so no
 * strategy can route outside Envoy's subset hint or to an endpoint known to be down.
 */
import type { RouterConfig } from '../config/types.js';
import type { ProfileSpec } from '../scheduling/profile-spec.js';
import { HEALTH_FILTER } from './filter/health-filter.js';
import { IMBALANCE_ESCAPE_FILTER } from './filter/imbalance-escape-filter.js';
import { MODEL_SUBSET_FILTER } from './filter/model-subset-filter.js';
import { PREFIX_CACHE_PLUGIN } from './multi/prefix-cache-plugin.js';
import { MAX_SCORE_PICKER } from './picker/max-score-picker.js';
import { PREFIX_HASH_PICKER } from './picker/prefix-hash-picker.js';
import { RANDOM_PICKER } from './picker/random-picker.js';
import { ROUND_ROBIN_PICKER } from './picker/round-robin-picker.js';
import { KV_USAGE_SCORER } from './scorer/kv-usage-scorer.js';
import { QUEUE_SCORER } from './scorer/queue-scorer.js';

const ELIGIBILITY = [{ type: MODEL_SUBSET_FILTER }, { type: HEALTH_FILTER }] as const;

export function roundRobinProfile(): ProfileSpec {
  return { name: 'round-robin', plugins: [...ELIGIBILITY, { type: ROUND_ROBIN_PICKER }] };
}

export function randomProfile(): ProfileSpec {
  return { name: 'random', plugins: [...ELIGIBILITY, { type: RANDOM_PICKER }] };
}

/** Fewest router-side in-flight requests; ties broken at random. */
export function leastRequestProfile(): ProfileSpec {
  return {
    name: 'least-request',
    plugins: [
      ...ELIGIBILITY,
      { type: QUEUE_SCORER, params: { signal: 'inflight' }, weight: 1 },
      { type: MAX_SCORE_PICKER, params: { reason: 'load' } },
    ],
  };
}

export function prefixHashProfile(): ProfileSpec {
  return { name: 'prefix-hash', plugins: [...ELIGIBILITY, { type: PREFIX_HASH_PICKER }] };
}

/** Prefix affinity weighed against queue and KV usage, with the imbalance escape. */
export function cacheAwareProfile(config: RouterConfig): ProfileSpec {
  const w = config.cacheAware.weights;
  return {
    name: 'cache-aware',
    plugins: [
      ...ELIGIBILITY,
      { type: IMBALANCE_ESCAPE_FILTER },
      { type: PREFIX_CACHE_PLUGIN, weight: w.prefix },
      { type: QUEUE_SCORER, weight: w.queue },
      { type: KV_USAGE_SCORER, weight: w.kvUsage },
      { type: MAX_SCORE_PICKER },
    ],
  };
}
