/**
 * The `auto` strategy: one plugin that is filter, scorer, picker and hooks at once and
 * delegates each role to one of three internal profiles, chosen by the AutoModeSelector
 * from the sliding-window traffic statistics (re-evaluated every evaluateIntervalMs):
 *
 *   load         round-robin (default, `load.auto.loadMode`), or least-loaded on the
 *                effective queue (router in-flight raised to the merged engine queue). Not
 *                the router's in-flight count alone: behind Envoy with
 *                `response_body_mode: NONE` a ticket closes at the response headers, so
 *                that count is ~0 and "least-request" degenerates into random choice.
 *   affinity     imbalance escape, prefix affinity (3) + queue (1): affinity with a
 *                threshold fallback, for high reuse on a few engines
 *   cache-aware  [hotspot replication], imbalance escape, prefix / queue / KV-usage with the
 *                configured cache-aware weights, for high reuse on many engines
 *   learning     the initial mode while reuse is unknown: the affinity profile for a request
 *                some engine holds at least `load.auto.learningMinMatch` of, the load
 *                mode's picker for every other (cold) request — evidence per request
 *                instead of a guess for all of them
 *
 * Why one plugin instead of switching profiles in the scheduler: the scheduler stays
 * unaware of modes, and the state that must survive a switch lives here once — the prefix
 * index is updated on every decision whatever the mode, so switching to an affinity mode
 * starts warm. The delegated scorers' weighted sum is normalised by the sum of weights so
 * the framework sees one score in [0,1] (same order as the sub-profile's totals).
 */
import { DEFAULT_AUTO_INITIAL, DEFAULT_AUTO_LEARNING_MIN_MATCH, loadConfigOf } from '../../config/sections/load.js';
import type { Endpoint, RouteDecision } from '../../core/types.js';
import type { PluginContext, PluginFactory } from '../../scheduling/plugin-registry.js';
import type { TrafficStats } from '../../scheduling/traffic-stats.js';
import type { Candidate, CycleState, EndpointsChangedHook, Filter, Picker, PickResult, RoutedHook, Scorer } from '../../scheduling/types.js';
import { imbalanceEscapeFilterFactory } from '../filter/imbalance-escape-filter.js';
import { HotspotReplicationFilter, hotspotFilterFactory } from '../filter/hotspot-replication.js';
import { sharedTrafficStats } from '../load-signal-services.js';
import { prefixCachePluginFactory, type PrefixCachePlugin } from '../multi/prefix-cache-plugin.js';
import { params } from '../plugin-params.js';
import { maxScorePickerFactory, type MaxScorePicker } from '../picker/max-score-picker.js';
import { roundRobinPickerFactory } from '../picker/round-robin-picker.js';
import { kvUsageScorerFactory } from '../scorer/kv-usage-scorer.js';
import { queueScorerFactory } from '../scorer/queue-scorer.js';
import { AUTO_MODES, AutoModeSelector, type AutoMode, type AutoModeOptions } from './auto-mode.js';

export const AUTO_STRATEGY_PLUGIN = 'auto-strategy';

interface SubProfile {
  readonly filters: readonly Filter[];
  readonly scorers: readonly { readonly scorer: Scorer; readonly weight: number }[];
  readonly picker: Picker;
  /**
   * Per-request gate: when the best raw score of `scorer` (one of `scorers`) over the
   * candidates stays below `minScore`, the request is cold and `picker` picks instead.
   */
  readonly cold?: { readonly scorer: Scorer; readonly minScore: number; readonly picker: Picker };
}

const MODE = 'auto-mode';
const COLD = 'auto-cold';

export class AutoStrategyPlugin implements Filter, Scorer, Picker, RoutedHook, EndpointsChangedHook {
  private lastEvalMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly name: string,
    readonly selector: AutoModeSelector,
    private readonly profiles: Readonly<Record<AutoMode, SubProfile>>,
    private readonly routedHooks: readonly RoutedHook[],
    private readonly changedHooks: readonly EndpointsChangedHook[],
    private readonly stats: TrafficStats,
    private readonly engines: () => number,
    private readonly evaluateIntervalMs: number,
  ) {}

  get mode(): AutoMode {
    return this.selector.current;
  }

  /** The internal hotspot filter (cache-aware mode), for the stats accessor. */
  get hotspot(): HotspotReplicationFilter | undefined {
    return this.profiles['cache-aware'].filters.find((f): f is HotspotReplicationFilter => f instanceof HotspotReplicationFilter);
  }

  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[] {
    if (state.nowMs - this.lastEvalMs >= this.evaluateIntervalMs) {
      this.lastEvalMs = state.nowMs;
      this.selector.evaluate(state.nowMs, this.stats.snapshot(), this.engines());
    }
    const mode = this.selector.current;
    state.scratch.set(MODE, mode);
    state.notes.push(`auto: ${mode}`);
    let left = candidates;
    for (const f of this.profiles[mode].filters) {
      left = f.filter(state, left);
      if (left.length === 0) break;
    }
    return left;
  }

  score(state: CycleState, candidates: readonly Candidate[]): Float64Array {
    const sub = this.profiles[this.modeOf(state)];
    const n = candidates.length;
    const out = new Float64Array(n);
    let wsum = 0;
    let best = 0;
    for (const { scorer, weight } of sub.scorers) {
      if (weight <= 0) continue;
      wsum += weight;
      const raw = scorer.score(state, candidates);
      const gate = sub.cold?.scorer === scorer;
      for (let i = 0; i < n; i++) {
        const v = raw[i];
        const s = v === undefined || Number.isNaN(v) ? 0 : v < 0 ? 0 : v > 1 ? 1 : v;
        out[i] = out[i]! + s * weight;
        if (gate && s > best) best = s;
      }
    }
    if (sub.cold !== undefined) state.scratch.set(COLD, best < sub.cold.minScore);
    if (wsum > 0) for (let i = 0; i < n; i++) out[i] = out[i]! / wsum;
    return out;
  }

  pick(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult {
    const sub = this.profiles[this.modeOf(state)];
    if (sub.cold !== undefined && state.scratch.get(COLD) === true) {
      state.notes.push('auto: cold request balanced');
      return sub.cold.picker.pick(state, candidates, totals);
    }
    return sub.picker.pick(state, candidates, totals);
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    for (const h of this.routedHooks) h.onRouted(state, decision);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    for (const h of this.changedHooks) h.onEndpointsChanged(endpoints);
  }

  private modeOf(state: CycleState): AutoMode {
    return (state.scratch.get(MODE) as AutoMode | undefined) ?? this.selector.current;
  }
}

/** Params: `initial` mode (default `load.auto.initial`, itself default learning); thresholds come from `load.auto`. */
export const autoStrategyPluginFactory: PluginFactory = (name, p, ctx) => {
  const r = params(name, p).only('initial');
  const l = loadConfigOf(ctx.config);
  const opts: AutoModeOptions = {
    lowReuse: l.auto.lowReuse,
    highReuse: l.auto.highReuse,
    fewEngines: l.auto.fewEngines,
    minRequests: l.auto.minRequests,
    minDwellMs: l.auto.minDwellMs,
    initial: r.oneOf<AutoMode>('initial', l.auto.initial ?? DEFAULT_AUTO_INITIAL, AUTO_MODES),
  };
  const built = buildSubProfiles(name, ctx, l.hotspot.enabled, l.auto.loadMode ?? 'round-robin', l.auto.learningMinMatch ?? DEFAULT_AUTO_LEARNING_MIN_MATCH);
  return new AutoStrategyPlugin(
    name,
    new AutoModeSelector(opts, ctx.logger.child({ plugin: name })),
    built.profiles,
    built.routedHooks,
    built.changedHooks,
    sharedTrafficStats(ctx),
    () => ctx.endpoints.size,
    l.auto.evaluateIntervalMs,
  );
};

function buildSubProfiles(
  name: string,
  ctx: PluginContext,
  hotspotOn: boolean,
  loadMode: 'least-loaded' | 'round-robin',
  learningMinMatch: number,
): { profiles: Record<AutoMode, SubProfile>; routedHooks: RoutedHook[]; changedHooks: EndpointsChangedHook[] } {
  const w = ctx.config.cacheAware.weights;
  const prefix = prefixCachePluginFactory(`${name}/prefix-cache`, {}, ctx) as PrefixCachePlugin;
  const queue = queueScorerFactory(`${name}/queue`, {}, ctx) as Scorer;
  const leastLoaded = queueScorerFactory(`${name}/least-loaded`, {}, ctx) as Scorer;
  const kv = kvUsageScorerFactory(`${name}/kv-usage`, {}, ctx) as Scorer;
  const imbalance = imbalanceEscapeFilterFactory(`${name}/imbalance`, {}, ctx) as Filter;
  const hotspot = hotspotOn ? (hotspotFilterFactory(`${name}/hotspot`, {}, ctx) as HotspotReplicationFilter) : undefined;
  const picker = maxScorePickerFactory(`${name}/max-score`, {}, ctx) as Picker;
  const loadPicker = maxScorePickerFactory(`${name}/least-request`, { reason: 'load' }, ctx) as Picker;
  const load: SubProfile =
    loadMode === 'round-robin'
      ? { filters: [], scorers: [], picker: roundRobinPickerFactory(`${name}/round-robin`, {}, ctx) as Picker }
      : { filters: [], scorers: [{ scorer: leastLoaded, weight: 1 }], picker: loadPicker };
  const affinity: SubProfile = { filters: [imbalance], scorers: [{ scorer: prefix, weight: 3 }, { scorer: queue, weight: 1 }], picker };
  // Learning: the affinity profile, whose cold requests go to the load mode's picker. With
  // least-loaded, the cold pick is the max-score picker over totals that are dominated by
  // the queue score (the prefix scores are all below the gate), i.e. least loaded as well.
  const learning: SubProfile = {
    ...affinity,
    cold: { scorer: prefix, minScore: learningMinMatch, picker: loadMode === 'round-robin' ? load.picker : loadPicker },
  };
  const profiles: Record<AutoMode, SubProfile> = {
    learning,
    load,
    affinity,
    'cache-aware': {
      filters: hotspot !== undefined ? [hotspot, imbalance] : [imbalance],
      scorers: [
        { scorer: prefix, weight: w.prefix },
        { scorer: queue, weight: w.queue },
        { scorer: kv, weight: w.kvUsage },
      ],
      picker,
    },
  };
  // The hotspot hook only acts on cycles its filter ran in; the index learns every decision.
  const routedHooks: RoutedHook[] = hotspot !== undefined ? [hotspot, prefix] : [prefix];
  const changedHooks: EndpointsChangedHook[] = [prefix, picker as MaxScorePicker, loadPicker as MaxScorePicker];
  if (hotspot !== undefined) changedHooks.push(hotspot);
  return { profiles, routedHooks, changedHooks };
}
