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
import { PRECISE_PREFIX_CACHE_PLUGIN, precisePrefixCachePluginFactory } from './multi/precise-prefix-cache-plugin.js';
import { MAX_SCORE_PICKER, maxScorePickerFactory } from './picker/max-score-picker.js';
import { PREFIX_HASH_PICKER, prefixHashPickerFactory } from './picker/prefix-hash-picker.js';
import { RANDOM_PICKER, randomPickerFactory } from './picker/random-picker.js';
import { ROUND_ROBIN_PICKER, roundRobinPickerFactory } from './picker/round-robin-picker.js';
import { KV_USAGE_SCORER, kvUsageScorerFactory } from './scorer/kv-usage-scorer.js';
import { QUEUE_SCORER, queueScorerFactory } from './scorer/queue-scorer.js';
import { HOTSPOT_FILTER, hotspotFilterFactory } from './filter/hotspot-replication.js';
import { ENGINE_METRICS_PLUGIN, engineMetricsPluginFactory } from './hooks/engine-metrics.js';
import { INDEX_CALIBRATION_PLUGIN, indexCalibrationPluginFactory } from './hooks/index-calibration.js';
import { TOKEN_LOAD_MODEL_PLUGIN, tokenLoadModelPluginFactory } from './hooks/token-load-model.js';
import { TRAFFIC_STATS_PLUGIN, trafficStatsPluginFactory } from './hooks/traffic-stats-recorder.js';
import { autoProfile, boundedLoadHashProfile, powerOfTwoProfile } from './load-strategies.js';
import { BOUNDED_LOAD_HASH_PICKER, boundedLoadHashPickerFactory } from './picker/bounded-load-hash.js';
import { POWER_OF_TWO_PICKER, powerOfTwoPickerFactory } from './picker/power-of-two.js';
import { SESSION_AFFINITY_SCORER, sessionAffinityScorerFactory } from './scorer/session-affinity.js';
import { TOKEN_LOAD_SCORER, tokenLoadScorerFactory } from './scorer/token-load.js';
import { AUTO_STRATEGY_PLUGIN, autoStrategyPluginFactory } from './strategy/auto-strategy.js';

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
    .registerPlugin(PRECISE_PREFIX_CACHE_PLUGIN, precisePrefixCachePluginFactory)
    // pickers
    .registerPlugin(MAX_SCORE_PICKER, maxScorePickerFactory)
    .registerPlugin(ROUND_ROBIN_PICKER, roundRobinPickerFactory)
    .registerPlugin(RANDOM_PICKER, randomPickerFactory)
    .registerPlugin(PREFIX_HASH_PICKER, prefixHashPickerFactory)
    // load signals, hotspots, sessions, auto (docs/load-signals.md)
    .registerPlugin(HOTSPOT_FILTER, hotspotFilterFactory)
    .registerPlugin(SESSION_AFFINITY_SCORER, sessionAffinityScorerFactory)
    .registerPlugin(TOKEN_LOAD_SCORER, tokenLoadScorerFactory)
    .registerPlugin(BOUNDED_LOAD_HASH_PICKER, boundedLoadHashPickerFactory)
    .registerPlugin(POWER_OF_TWO_PICKER, powerOfTwoPickerFactory)
    .registerPlugin(ENGINE_METRICS_PLUGIN, engineMetricsPluginFactory)
    .registerPlugin(TOKEN_LOAD_MODEL_PLUGIN, tokenLoadModelPluginFactory)
    .registerPlugin(TRAFFIC_STATS_PLUGIN, trafficStatsPluginFactory)
    .registerPlugin(INDEX_CALIBRATION_PLUGIN, indexCalibrationPluginFactory)
    .registerPlugin(AUTO_STRATEGY_PLUGIN, autoStrategyPluginFactory)
    // strategies
    .registerStrategy('round-robin', roundRobinProfile)
    .registerStrategy('random', randomProfile)
    .registerStrategy('least-request', leastRequestProfile)
    .registerStrategy('prefix-hash', prefixHashProfile)
    .registerStrategy('cache-aware', cacheAwareProfile)
    .registerStrategy('bounded-load-hash', boundedLoadHashProfile)
    .registerStrategy('power-of-two', powerOfTwoProfile)
    .registerStrategy('auto', autoProfile);
}
