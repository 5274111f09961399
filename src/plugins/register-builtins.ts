/**
 * Registers every built-in plugin type and strategy, in one explicit list (no side-effect
 * imports). Add new built-ins here.
 */
import type { PluginRegistry } from '../scheduling/plugin-registry.js';
import {
  cacheAwareProfile,
  leastRequestProfile,
  prefixHashProfile,
  randomProfile,
  roundRobinProfile,
} from './builtin-strategies.js';
import { HEALTH_FILTER, healthFilterFactory } from './filter/health-filter.js';
import { IMBALANCE_ESCAPE_FILTER, imbalanceEscapeFilterFactory } from './filter/imbalance-escape-filter.js';
import { MODEL_SUBSET_FILTER, modelSubsetFilterFactory } from './filter/model-subset-filter.js';
import { PREFIX_CACHE_PLUGIN, prefixCachePluginFactory } from './multi/prefix-cache-plugin.js';
import { MAX_SCORE_PICKER, maxScorePickerFactory } from './picker/max-score-picker.js';
import { PREFIX_HASH_PICKER, prefixHashPickerFactory } from './picker/prefix-hash-picker.js';
import { RANDOM_PICKER, randomPickerFactory } from './picker/random-picker.js';
import { ROUND_ROBIN_PICKER, roundRobinPickerFactory } from './picker/round-robin-picker.js';
import { KV_USAGE_SCORER, kvUsageScorerFactory } from './scorer/kv-usage-scorer.js';
import { QUEUE_SCORER, queueScorerFactory } from './scorer/queue-scorer.js';

export function registerBuiltins(registry: PluginRegistry): PluginRegistry {
  return registry
    // filters
    .registerPlugin(MODEL_SUBSET_FILTER, modelSubsetFilterFactory)
    .registerPlugin(HEALTH_FILTER, healthFilterFactory)
    .registerPlugin(IMBALANCE_ESCAPE_FILTER, imbalanceEscapeFilterFactory)
    // scorers
    .registerPlugin(QUEUE_SCORER, queueScorerFactory)
    .registerPlugin(KV_USAGE_SCORER, kvUsageScorerFactory)
    // multi (scorer + hooks)
    .registerPlugin(PREFIX_CACHE_PLUGIN, prefixCachePluginFactory)
    // pickers
    .registerPlugin(MAX_SCORE_PICKER, maxScorePickerFactory)
    .registerPlugin(ROUND_ROBIN_PICKER, roundRobinPickerFactory)
    .registerPlugin(RANDOM_PICKER, randomPickerFactory)
    .registerPlugin(PREFIX_HASH_PICKER, prefixHashPickerFactory)
    // strategies (bounded-load-hash, power-of-two and auto are not implemented yet)
    .registerStrategy('round-robin', roundRobinProfile)
    .registerStrategy('random', randomProfile)
    .registerStrategy('least-request', leastRequestProfile)
    .registerStrategy('prefix-hash', prefixHashProfile)
    .registerStrategy('cache-aware', cacheAwareProfile);
}
