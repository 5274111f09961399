/**
 * Every built-in plugin type, in one explicit list (no side-effect imports). Adding a
 * plugin = its source file, its test file, and one line here; docs/plugins.md is generated
 * from the list (`node dist/scripts/gen-plugin-docs.js`).
 */
import { PluginCatalog } from '../framework/plugin-api.js';
import { healthFilter } from './filter/health-filter.js';
import { hotspotFilter } from './filter/hotspot-replication.js';
import { imbalanceEscapeFilter } from './filter/imbalance-escape-filter.js';
import { modelSubsetFilter } from './filter/model-subset-filter.js';
import { roleFilter } from './filter/role-filter.js';
import { autoProfileHandler } from './handler/auto-profile-handler.js';
import { disaggProfileHandler } from './handler/disagg-profile-handler.js';
import { singleProfileHandler } from './handler/single-profile-handler.js';
import { indexCalibration } from './multi/index-calibration.js';
import { precisePrefixCache } from './multi/precise-prefix-cache-plugin.js';
import { predictedTtft } from './multi/predicted-ttft.js';
import { prefixCache } from './multi/prefix-cache-plugin.js';
import { stickyUntilSaturatedPicker } from './multi/sticky-until-saturated.js';
import { ttftModel } from './multi/ttft-model-plugin.js';
import { boundedLoadHashPicker } from './picker/bounded-load-hash.js';
import { maxScorePicker } from './picker/max-score-picker.js';
import { powerOfTwoPicker } from './picker/power-of-two.js';
import { prefixHashPicker } from './picker/prefix-hash-picker.js';
import { randomPicker } from './picker/random-picker.js';
import { roundRobinPicker } from './picker/round-robin-picker.js';
import { coldRequestPlacement } from './placement/cold-request-placement.js';
import { kvUsageScorer } from './scorer/kv-usage-scorer.js';
import { queueScorer } from './scorer/queue-scorer.js';
import { sessionAffinityScorer } from './scorer/session-affinity.js';
import { tokenLoadScorer } from './scorer/token-load.js';

export function registerBuiltins(catalog: PluginCatalog): PluginCatalog {
  return (
    catalog
      // filters
      .register(modelSubsetFilter)
      .register(healthFilter)
      .register(imbalanceEscapeFilter)
      .register(hotspotFilter)
      .register(roleFilter)
      // scorers
      .register(queueScorer)
      .register(kvUsageScorer)
      .register(sessionAffinityScorer)
      .register(tokenLoadScorer)
      // multi (scorer / hooks / annotations)
      .register(prefixCache)
      .register(precisePrefixCache)
      .register(indexCalibration)
      .register(ttftModel)
      .register(predictedTtft)
      // placements
      .register(coldRequestPlacement)
      // pickers
      .register(maxScorePicker)
      .register(roundRobinPicker)
      .register(randomPicker)
      .register(prefixHashPicker)
      .register(boundedLoadHashPicker)
      .register(powerOfTwoPicker)
      .register(stickyUntilSaturatedPicker)
      // profile handlers
      .register(singleProfileHandler)
      .register(autoProfileHandler)
      .register(disaggProfileHandler)
  );
}

/** A new catalog with every built-in. */
export function builtinCatalog(): PluginCatalog {
  return registerBuiltins(new PluginCatalog());
}
