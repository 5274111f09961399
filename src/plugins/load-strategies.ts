/**
 * Profiles of the load-oriented strategies (bounded-load-hash, power-of-two, auto) and the
 * plugin lists the load-signal work adds to every built-in profile.
 *
 * `loadSignalPlugins` are hooks only (no effect on scoring by themselves): the engine
 * metrics poller + staleness merge (when `engineMetrics.enabled`), the token-load model
 * (fills LoadSnapshot.pendingTokens), the traffic statistics, and — in profiles that keep
 * a prefix index — the index calibration.
 */
import { loadConfigOf } from '../config/sections/load.js';
import type { RouterConfig } from '../config/types.js';
import type { PluginSpec, ProfileSpec } from '../scheduling/profile-spec.js';
import { HEALTH_FILTER } from './filter/health-filter.js';
import { HOTSPOT_FILTER } from './filter/hotspot-replication.js';
import { MODEL_SUBSET_FILTER } from './filter/model-subset-filter.js';
import { ENGINE_METRICS_PLUGIN } from './hooks/engine-metrics.js';
import { INDEX_CALIBRATION_PLUGIN } from './hooks/index-calibration.js';
import { TOKEN_LOAD_MODEL_PLUGIN } from './hooks/token-load-model.js';
import { TRAFFIC_STATS_PLUGIN } from './hooks/traffic-stats-recorder.js';
import { BOUNDED_LOAD_HASH_PICKER } from './picker/bounded-load-hash.js';
import { POWER_OF_TWO_PICKER } from './picker/power-of-two.js';
import { SESSION_AFFINITY_SCORER } from './scorer/session-affinity.js';
import { TOKEN_LOAD_SCORER } from './scorer/token-load.js';
import { AUTO_STRATEGY_PLUGIN } from './strategy/auto-strategy.js';

const ELIGIBILITY: readonly PluginSpec[] = [{ type: MODEL_SUBSET_FILTER }, { type: HEALTH_FILTER }];

/** Hooks feeding load signals; `withIndex` adds index calibration (profiles with a prefix index). */
export function loadSignalPlugins(config: RouterConfig, opts: { withIndex: boolean }): PluginSpec[] {
  const out: PluginSpec[] = [];
  if (config.engineMetrics.enabled) out.push({ type: ENGINE_METRICS_PLUGIN });
  out.push({ type: TOKEN_LOAD_MODEL_PLUGIN }, { type: TRAFFIC_STATS_PLUGIN });
  if (opts.withIndex) out.push({ type: INDEX_CALIBRATION_PLUGIN });
  return out;
}

/** Hotspot replication filter for the cache-aware profile (before the imbalance escape). */
export function hotspotPlugins(config: RouterConfig): PluginSpec[] {
  return loadConfigOf(config).hotspot.enabled ? [{ type: HOTSPOT_FILTER }] : [];
}

/** Extra scorers of scored profiles: session stickiness (with a session header) and token load. */
export function loadScorerPlugins(config: RouterConfig, opts: { tokenLoad: boolean }): PluginSpec[] {
  const l = loadConfigOf(config);
  const out: PluginSpec[] = [];
  if (config.requests.sessionHeader !== undefined && l.session.weight > 0) {
    out.push({ type: SESSION_AFFINITY_SCORER, weight: l.session.weight });
  }
  if (opts.tokenLoad && l.tokenLoadWeight > 0) out.push({ type: TOKEN_LOAD_SCORER, weight: l.tokenLoadWeight });
  return out;
}

export function boundedLoadHashProfile(config: RouterConfig): ProfileSpec {
  return {
    name: 'bounded-load-hash',
    plugins: [...ELIGIBILITY, { type: BOUNDED_LOAD_HASH_PICKER }, ...loadSignalPlugins(config, { withIndex: false })],
  };
}

export function powerOfTwoProfile(config: RouterConfig): ProfileSpec {
  return {
    name: 'power-of-two',
    plugins: [...ELIGIBILITY, { type: POWER_OF_TWO_PICKER }, ...loadSignalPlugins(config, { withIndex: false })],
  };
}

export function autoProfile(config: RouterConfig): ProfileSpec {
  return {
    name: 'auto',
    plugins: [...ELIGIBILITY, { type: AUTO_STRATEGY_PLUGIN }, ...loadSignalPlugins(config, { withIndex: true })],
  };
}
