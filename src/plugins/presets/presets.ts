/**
 * The shipped presets, as data: each is the plugin graph (plugins + schedulingProfiles, the
 * shape of an llm-d EndpointPickerConfig) that `strategy: <name>` stands for. A preset
 * states only the parameters where it departs from a plugin's own defaults; everything else
 * comes from the plugin's schema, so a plugin's defaults and docs live in one place.
 * `strategy: {name, weights, plugins}` adjusts a preset (strategy.ts); docs/configuration.md
 * prints every preset's graph.
 *
 * Every profile starts with the eligibility filters (model/subset, then health), so no
 * preset can route outside Envoy's subset hint or to an endpoint known to be down.
 * `optional` instances are left out (with their profile references) unless the strategy
 * names them in `plugins` or gives them a weight above 0.
 */
import type { PluginSpec, ProfileSpec } from '../../scheduling/plugin-graph.js';

/** The presets the fleet simulator and `cacheroute simulate` compare (every preset but precise-cache-aware). */
export const STRATEGIES = [
  'round-robin',
  'random',
  'least-request',
  'prefix-hash',
  'cache-aware',
  'bounded-load-hash',
  'power-of-two',
  'auto',
  'predicted-ttft',
  'sticky-until-saturated',
] as const;

/** Every preset `strategy:` accepts: the strategies, and cache-aware on engine KV events (needs the engines' events). */
export const PRESET_NAMES = [...STRATEGIES, 'precise-cache-aware'] as const;
export type StrategyName = (typeof PRESET_NAMES)[number];

export interface PresetPlugin extends PluginSpec {
  /** Left out unless the strategy names it in `plugins` or gives it a weight above 0. */
  readonly optional?: true;
}

export interface Preset {
  readonly description: string;
  readonly plugins: readonly PresetPlugin[];
  readonly schedulingProfiles: readonly ProfileSpec[];
}

const ELIGIBILITY: readonly PresetPlugin[] = [{ type: 'model-subset-filter' }, { type: 'health-filter' }];
const ELIGIBLE = [{ pluginRef: 'model-subset-filter' }, { pluginRef: 'health-filter' }] as const;

/** Session stickiness, off until the strategy names it with its `header`; dominant over the cache-aware sum (3+2+2). */
const SESSION: PresetPlugin = { type: 'session-affinity-scorer', optional: true };
const SESSION_WEIGHT = 10;

function single(name: string, description: string, plugins: readonly PresetPlugin[], refs: ProfileSpec['plugins']): Preset {
  return { description, plugins: [...ELIGIBILITY, ...plugins], schedulingProfiles: [{ name, plugins: [...ELIGIBLE, ...refs] }] };
}

/** A one-picker preset: the picker alone decides. */
function pickerOnly(name: string, description: string, picker: PresetPlugin): Preset {
  return single(name, description, [picker], [{ pluginRef: picker.name ?? picker.type }]);
}

/**
 * cache-aware and precise-cache-aware: prefix affinity weighed against queue and KV usage
 * (GIE/llm-d's default profile: 3/2/2), the imbalance escape first, cold requests placed on
 * the shortest prefill queue (docs/decisions/0003), and the index sized from engine figures
 * (index-calibration) when the index is the router's own approximation.
 */
function cacheAware(name: string, description: string, affinity: PresetPlugin, calibrated: boolean): Preset {
  return single(
    name,
    description,
    [
      // Opt-in (docs/decisions/0006): on conversation traffic it moves sessions away from their history.
      { type: 'hotspot-replication-filter', optional: true },
      { type: 'imbalance-escape-filter' },
      affinity,
      // softQueue at the imbalance escape's absThreshold (32): queue differences below it count little.
      { type: 'queue-scorer', parameters: { softQueue: 32 } },
      { type: 'kv-usage-scorer' },
      SESSION,
      { type: 'token-load-scorer', optional: true },
      { type: 'cold-request-placement' },
      { type: 'max-score-picker' },
      ...(calibrated ? [{ type: 'index-calibration', parameters: { prefixPlugin: 'prefix-cache' } }] : []),
    ],
    [
      { pluginRef: 'hotspot-replication-filter' },
      { pluginRef: 'imbalance-escape-filter' },
      { pluginRef: 'prefix-cache', weight: 3 },
      { pluginRef: 'queue-scorer', weight: 2 },
      { pluginRef: 'kv-usage-scorer', weight: 2 },
      { pluginRef: 'session-affinity-scorer', weight: SESSION_WEIGHT },
      { pluginRef: 'token-load-scorer', weight: 1 },
      { pluginRef: 'cold-request-placement' },
      { pluginRef: 'max-score-picker' },
    ],
  );
}

/**
 * auto: four profiles and the auto handler choosing between them from the traffic
 * statistics. The prefix index and the TTFT model are one instance each, shared by the
 * profiles that reference them. Weights per profile: `weights: {<profile>: {…}}`.
 *
 * Where reuse is high (affinity, cache-aware) or not yet measured (learning) the pick is
 * predicted-ttft's: on the fleet simulator the weighted blend these profiles ran before
 * queued sessions on their home engines (agentic at 64 engines, 2/s: TTFT p99 573 vs 331 ms)
 * and piled a hot prefix onto few engines in the learning phase (hot prefix, 16 engines: p99
 * 944 vs 351 ms; docs/decisions/0350). The learning profile still hands cold requests (no
 * engine holds a quarter of the prompt) to round robin: a burst of new sessions spreads
 * instead of following the short shared header (Mooncake-format trace at 2 starts/s/engine:
 * p99 162 ms with it, 188 without; better in 8 of 13 cells, worse in 3).
 */
const AUTO: Preset = {
  description:
    'Chooses per request between a load profile (little prefix reuse) and predicted-ttft (much reuse, or while the traffic statistics are still coming in; cold requests balanced) (auto-profile-handler).',
  plugins: [
    ...ELIGIBILITY,
    { type: 'hotspot-replication-filter', name: 'hotspot', optional: true },
    { type: 'prefix-cache' },
    { type: 'ttft-model' },
    { type: 'predicted-ttft', name: 'ttft' },
    // The load profile balances round-robin: with no cache to win, the even spread is what counts.
    { type: 'round-robin-picker', name: 'round-robin' },
    {
      type: 'cold-request-placement',
      name: 'learning-cold',
      // A short shared template header (a quarter of the prompt or less) is not worth concentrating load for.
      parameters: { minMatch: 0.25, sessionsAreWarm: false, order: 'picker', picker: 'round-robin', note: 'auto: cold request balanced' },
    },
    { type: 'auto-profile-handler', name: 'auto' },
    { type: 'index-calibration', parameters: { prefixPlugin: 'prefix-cache' } },
  ],
  schedulingProfiles: [
    {
      name: 'learning',
      plugins: [...ELIGIBLE, { pluginRef: 'prefix-cache', weight: 1 }, { pluginRef: 'learning-cold' }, { pluginRef: 'ttft' }],
    },
    { name: 'load', plugins: [...ELIGIBLE, { pluginRef: 'round-robin' }] },
    { name: 'affinity', plugins: [...ELIGIBLE, { pluginRef: 'prefix-cache', weight: 1 }, { pluginRef: 'ttft' }] },
    {
      name: 'cache-aware',
      plugins: [...ELIGIBLE, { pluginRef: 'hotspot' }, { pluginRef: 'prefix-cache', weight: 1 }, { pluginRef: 'ttft' }],
    },
  ],
};

/**
 * predicted-ttft and sticky-until-saturated: the prefix index and the TTFT model, then one
 * picker over their predictions. No imbalance escape or queue scorer: queued prefill is
 * inside the prediction.
 */
function ttftPreset(name: string, description: string, picker: string): Preset {
  return single(
    name,
    description,
    [
      { type: 'prefix-cache' },
      { type: 'ttft-model' },
      { type: picker },
      { type: 'index-calibration', parameters: { prefixPlugin: 'prefix-cache' } },
    ],
    [{ pluginRef: 'prefix-cache', weight: 1 }, { pluginRef: picker }],
  );
}

export const PRESETS: Readonly<Record<StrategyName, Preset>> = {
  'round-robin': pickerOnly('round-robin', 'Each eligible endpoint in turn.', { type: 'round-robin-picker' }),
  random: pickerOnly('random', 'A seeded random eligible endpoint.', { type: 'random-picker' }),
  'least-request': single(
    'least-request',
    'Fewest router-side in-flight requests; ties broken at random.',
    [{ type: 'queue-scorer', parameters: { signal: 'inflight' } }, SESSION, { type: 'max-score-picker', parameters: { reason: 'load' } }],
    [
      { pluginRef: 'queue-scorer', weight: 1 },
      { pluginRef: 'session-affinity-scorer', weight: SESSION_WEIGHT },
      { pluginRef: 'max-score-picker' },
    ],
  ),
  'prefix-hash': pickerOnly('prefix-hash', 'Consistent hash of the prompt prefix.', { type: 'prefix-hash-picker' }),
  'cache-aware': cacheAware(
    'cache-aware',
    'Prefix affinity from the router-side index weighed against queue and KV usage, with the imbalance escape and cold placement (the default).',
    { type: 'prefix-cache' },
    true,
  ),
  // Its profile is cache-aware's, with another affinity scorer: the profile keeps the name.
  'precise-cache-aware': cacheAware(
    'cache-aware',
    "cache-aware with affinity from the engines' KV events and router-side tokenization (precise-prefix-cache under the name prefix-cache; docs/kv-events.md).",
    { type: 'precise-prefix-cache', name: 'prefix-cache' },
    false,
  ),
  'bounded-load-hash': pickerOnly('bounded-load-hash', 'Consistent hash of the prefix group with bounded load.', {
    type: 'bounded-load-hash-picker',
  }),
  'power-of-two': pickerOnly('power-of-two', 'The less loaded of two seeded random endpoints.', { type: 'power-of-two-picker' }),
  auto: AUTO,
  'predicted-ttft': ttftPreset('predicted-ttft', 'Smallest predicted time to first token (ttft-model).', 'predicted-ttft'),
  'sticky-until-saturated': ttftPreset(
    'sticky-until-saturated',
    'Stays on the best cached engine until its predicted TTFT is saturated (ttft-model).',
    'sticky-until-saturated-picker',
  ),
};
