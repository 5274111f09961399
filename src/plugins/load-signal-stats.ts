/**
 * One accessor for everything the load-signal plugins know, for telemetry and the admin
 * endpoint: scrape health and ages, staleness fallbacks, learned output lengths, traffic
 * statistics, index calibration accuracy, hotspot sets, sessions and the auto mode.
 * Fields are absent when the running profile has no such plugin.
 */
import type { PollerStats } from '../endpoints/engine-metrics-poller.js';
import type { ScrapeStats } from '../endpoints/engine-metrics-store.js';
import type { OutputLengthStat } from '../endpoints/load-model.js';
import type { StalenessStats } from '../endpoints/staleness.js';
import type { ServiceKey } from '../scheduling/plugin-registry.js';
import type { TrafficSnapshot } from '../scheduling/traffic-stats.js';
import type { Plugin, Profile } from '../scheduling/types.js';
import { HotspotReplicationFilter, type HotspotStats } from './filter/hotspot-replication.js';
import { EngineMetricsPlugin } from './hooks/engine-metrics.js';
import { IndexCalibration, type CalibrationStats } from './hooks/index-calibration.js';
import { ENGINE_SIGNAL_STORE, STALENESS_TRACKER, TOKEN_LOAD_MODEL, TRAFFIC_STATS } from './load-signal-services.js';
import { SessionAffinityScorer, type SessionStats } from './scorer/session-affinity.js';
import type { AutoSwitch, AutoMode } from './strategy/auto-mode.js';
import { AutoStrategyPlugin } from './strategy/auto-strategy.js';

export interface LoadSignalStats {
  readonly scrapes?: readonly ScrapeStats[];
  readonly poller?: PollerStats;
  readonly staleness?: StalenessStats;
  readonly outputLength?: readonly OutputLengthStat[];
  readonly traffic?: TrafficSnapshot;
  readonly calibration?: CalibrationStats;
  readonly hotspot?: HotspotStats;
  readonly session?: SessionStats;
  readonly auto?: { readonly mode: AutoMode; readonly switches: readonly AutoSwitch[] };
}

/** What the accessor needs from the scheduler (its `service` and `profile`). */
export interface LoadSignalSource {
  service<T>(key: ServiceKey<T>): T | undefined;
  readonly profile: Profile;
}

export function loadSignalStats(s: LoadSignalSource): LoadSignalStats {
  const plugins = new Set<Plugin>([
    ...s.profile.filters,
    ...s.profile.scorers.map((w) => w.scorer),
    s.profile.picker,
    ...s.profile.routedHooks,
    ...s.profile.completedHooks,
  ]);
  const out: { -readonly [K in keyof LoadSignalStats]: LoadSignalStats[K] } = {};
  const store = s.service(ENGINE_SIGNAL_STORE);
  if (store !== undefined) out.scrapes = store.stats();
  const staleness = s.service(STALENESS_TRACKER);
  if (staleness !== undefined) out.staleness = staleness.stats();
  const model = s.service(TOKEN_LOAD_MODEL);
  if (model !== undefined) out.outputLength = model.learner.stats();
  const traffic = s.service(TRAFFIC_STATS);
  if (traffic !== undefined) out.traffic = traffic.snapshot();
  for (const p of plugins) {
    if (p instanceof EngineMetricsPlugin) {
      const ps = p.pollerStats();
      if (ps !== undefined) out.poller = ps;
    } else if (p instanceof IndexCalibration) out.calibration = p.stats();
    else if (p instanceof HotspotReplicationFilter) out.hotspot = p.stats();
    else if (p instanceof SessionAffinityScorer) out.session = p.stats();
    else if (p instanceof AutoStrategyPlugin) {
      out.auto = { mode: p.mode, switches: p.selector.switches() };
      const h = p.hotspot;
      if (h !== undefined) out.hotspot = h.stats();
    }
  }
  return out;
}
