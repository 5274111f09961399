/**
 * The shipped presets: what each `strategy:` shorthand expands to, as the same plugin graph
 * (plugins + schedulingProfiles) a config could state explicitly. The shorthand knobs
 * (`cacheAware:`, `load:`, `requests.sessionHeader`) become plugin parameters here and
 * nowhere else.
 *
 * Every profile starts with the eligibility filters (model/subset, then health), so no
 * preset can route outside Envoy's subset hint or to an endpoint known to be down.
 */
import type { GraphSpec, PluginSpec, ProfilePluginRef, ProfileSpec } from '../../scheduling/plugin-graph.js';
import type { CacheAwareConfig, LoadConfig } from './shorthand.js';

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
export type StrategyName = (typeof STRATEGIES)[number];

/** What the presets read from the config document. */
export interface PresetInput {
  readonly cacheAware: CacheAwareConfig;
  readonly load: LoadConfig;
  readonly requests: { readonly sessionHeader?: string | undefined; readonly charsPerToken: number };
}

const ELIGIBILITY: readonly PluginSpec[] = [{ type: 'model-subset-filter' }, { type: 'health-filter' }];

function refs(...names: (string | ProfilePluginRef | undefined | false)[]): ProfilePluginRef[] {
  const out: ProfilePluginRef[] = [];
  for (const n of names) {
    if (n === undefined || n === false) continue;
    out.push(typeof n === 'string' ? { pluginRef: n } : n);
  }
  return out;
}

function eligibilityRefs(): ProfilePluginRef[] {
  return refs('model-subset-filter', 'health-filter');
}

function unitOf(i: PresetInput): { unit: LoadConfig['unit']; tokensPerRequest: number } {
  return { unit: i.load.unit, tokensPerRequest: i.load.tokensPerRequest };
}

function single(name: string, plugins: readonly PluginSpec[], profile: readonly ProfilePluginRef[]): GraphSpec {
  return { plugins: [...ELIGIBILITY, ...plugins], schedulingProfiles: [{ name, plugins: [...eligibilityRefs(), ...profile] }] };
}

/** Session stickiness when a session header is configured (and its weight is above 0). */
function sessionScorer(i: PresetInput): { spec: PluginSpec; ref: ProfilePluginRef } | undefined {
  const s = i.load.session;
  if (i.requests.sessionHeader === undefined || s.weight <= 0) return undefined;
  return {
    spec: {
      type: 'session-affinity-scorer',
      parameters: { ...unitOf(i), ttlMs: s.ttlMs, maxSessions: s.maxSessions, overloadAbs: s.overloadAbs, overloadRel: s.overloadRel },
    },
    ref: { pluginRef: 'session-affinity-scorer', weight: s.weight },
  };
}

function prefixCacheSpec(i: PresetInput): PluginSpec {
  const c = i.cacheAware;
  return {
    type: 'prefix-cache',
    parameters: { blockChars: c.blockChars, maxPrefixBlocks: c.maxPrefixBlocks, indexCapacityBlocks: c.indexCapacityBlocks },
  };
}

/**
 * cache-aware's affinity scorer: `prefix-cache`, or `precise-prefix-cache` under the same
 * instance name when `cacheAware.preciseIndex` is set (its parameters, over the block geometry).
 */
function affinitySpec(i: PresetInput): PluginSpec {
  const precise = i.cacheAware.preciseIndex;
  if (precise === undefined) return prefixCacheSpec(i);
  const base = prefixCacheSpec(i);
  return { type: 'precise-prefix-cache', name: 'prefix-cache', parameters: { ...base.parameters, ...precise } };
}

function hotspotSpec(i: PresetInput): PluginSpec {
  const { enabled: _enabled, ...h } = i.load.hotspot;
  return { type: 'hotspot-replication-filter', parameters: { ...h, minKeyChars: i.cacheAware.blockChars, ...unitOf(i) } };
}

function imbalanceSpec(i: PresetInput): PluginSpec {
  const im = i.cacheAware.imbalance;
  return { type: 'imbalance-escape-filter', parameters: { absThreshold: im.absThreshold, relThreshold: im.relThreshold, ...unitOf(i) } };
}

function calibrationSpec(i: PresetInput): PluginSpec {
  const c = i.load.calibration;
  return {
    type: 'index-calibration',
    parameters: {
      prefixPlugin: 'prefix-cache',
      enabled: c.enabled,
      sizeFromEngine: c.sizeFromEngine,
      adaptCapacity: c.adaptCapacity,
      toleranceBlocks: c.toleranceBlocks,
      accuracyWindow: c.accuracyWindow,
      charsPerToken: i.requests.charsPerToken,
      keyChars: i.load.hotspot.keyChars,
    },
  };
}

function blockGeometry(i: PresetInput): { blockChars: number; maxPrefixBlocks: number } {
  return { blockChars: i.cacheAware.blockChars, maxPrefixBlocks: i.cacheAware.maxPrefixBlocks };
}

function roundRobin(): GraphSpec {
  return single('round-robin', [{ type: 'round-robin-picker' }], refs('round-robin-picker'));
}

function random(): GraphSpec {
  return single('random', [{ type: 'random-picker' }], refs('random-picker'));
}

/** Fewest router-side in-flight requests; ties broken at random. */
function leastRequest(i: PresetInput): GraphSpec {
  const session = sessionScorer(i);
  return single(
    'least-request',
    [
      { type: 'queue-scorer', parameters: { signal: 'inflight' } },
      ...(session ? [session.spec] : []),
      { type: 'max-score-picker', parameters: { reason: 'load' } },
    ],
    refs({ pluginRef: 'queue-scorer', weight: 1 }, session?.ref, 'max-score-picker'),
  );
}

function prefixHash(i: PresetInput): GraphSpec {
  return single('prefix-hash', [{ type: 'prefix-hash-picker', parameters: blockGeometry(i) }], refs('prefix-hash-picker'));
}

/** Prefix affinity weighed against queue and KV usage, with the imbalance escape and cold placement. */
function cacheAware(i: PresetInput): GraphSpec {
  const c = i.cacheAware;
  const w = c.weights;
  const hot = i.load.hotspot.enabled;
  const session = sessionScorer(i);
  const tokenLoad = i.load.tokenLoadWeight > 0;
  const cold = c.coldRouting === 'prefill-queue';
  const plugins: PluginSpec[] = [
    ...(hot ? [hotspotSpec(i)] : []),
    imbalanceSpec(i),
    affinitySpec(i),
    { type: 'queue-scorer', parameters: { softQueue: Math.max(1, c.imbalance.absThreshold), signal: c.queueSignal } },
    { type: 'kv-usage-scorer' },
    ...(session ? [session.spec] : []),
    ...(tokenLoad ? [{ type: 'token-load-scorer' }] : []),
    ...(cold ? [{ type: 'cold-request-placement', parameters: { spread: c.coldSpread } }] : []),
    { type: 'max-score-picker' },
    // Calibration sizes the approximate index from engine figures; the precise index has the engines' own events.
    ...(c.preciseIndex === undefined ? [calibrationSpec(i)] : []),
  ];
  return single(
    'cache-aware',
    plugins,
    refs(
      hot && 'hotspot-replication-filter',
      'imbalance-escape-filter',
      { pluginRef: 'prefix-cache', weight: w.prefix },
      { pluginRef: 'queue-scorer', weight: w.queue },
      { pluginRef: 'kv-usage-scorer', weight: w.kvUsage },
      session?.ref,
      tokenLoad && { pluginRef: 'token-load-scorer', weight: i.load.tokenLoadWeight },
      cold && 'cold-request-placement',
      'max-score-picker',
    ),
  );
}

function boundedLoadHash(i: PresetInput): GraphSpec {
  const b = i.load.boundedLoad;
  return single(
    'bounded-load-hash',
    [
      {
        type: 'bounded-load-hash-picker',
        parameters: { epsilon: b.epsilon, keyChars: b.keyChars, minKeyChars: i.cacheAware.blockChars, ...unitOf(i) },
      },
    ],
    refs('bounded-load-hash-picker'),
  );
}

function powerOfTwo(i: PresetInput): GraphSpec {
  return single('power-of-two', [{ type: 'power-of-two-picker', parameters: unitOf(i) }], refs('power-of-two-picker'));
}

/**
 * Four profiles and the auto handler choosing between them from the traffic statistics.
 * The prefix index, the imbalance escape and the scorers are one instance each, shared by
 * the profiles that reference them. Weight-0 scorers are left out of the profiles.
 */
function auto(i: PresetInput): GraphSpec {
  const a = i.load.auto;
  const w = i.cacheAware.weights;
  const hot = i.load.hotspot.enabled;
  const roundRobinLoad = a.loadMode === 'round-robin';
  const loadPicker = roundRobinLoad ? 'round-robin' : 'least-request';
  const plugins: PluginSpec[] = [
    ...ELIGIBILITY,
    ...(hot ? [{ ...hotspotSpec(i), name: 'hotspot' }] : []),
    { ...imbalanceSpec(i), name: 'imbalance' },
    prefixCacheSpec(i),
    { type: 'queue-scorer', name: 'queue' },
    { type: 'kv-usage-scorer', name: 'kv-usage' },
    { type: 'max-score-picker', name: 'max-score' },
    ...(roundRobinLoad
      ? [{ type: 'round-robin-picker', name: 'round-robin' }]
      : [
          { type: 'queue-scorer', name: 'least-loaded' },
          { type: 'max-score-picker', name: 'least-request', parameters: { reason: 'load' } },
        ]),
    {
      type: 'cold-request-placement',
      name: 'learning-cold',
      parameters: {
        minMatch: a.learningMinMatch,
        sessionsAreWarm: false,
        order: 'picker',
        picker: loadPicker,
        note: 'auto: cold request balanced',
      },
    },
    {
      type: 'auto-profile-handler',
      name: 'auto',
      parameters: {
        lowReuse: a.lowReuse,
        highReuse: a.highReuse,
        fewEngines: a.fewEngines,
        minRequests: a.minRequests,
        minDwellMs: a.minDwellMs,
        evaluateIntervalMs: a.evaluateIntervalMs,
        initial: a.initial,
      },
    },
    calibrationSpec(i),
  ];
  const weighted = (pluginRef: string, weight: number): ProfilePluginRef | undefined => (weight > 0 ? { pluginRef, weight } : undefined);
  const affinityRefs = refs('imbalance', weighted('prefix-cache', 3), weighted('queue', 1));
  const profiles: ProfileSpec[] = [
    { name: 'learning', plugins: [...eligibilityRefs(), ...affinityRefs, { pluginRef: 'learning-cold' }, { pluginRef: 'max-score' }] },
    {
      name: 'load',
      plugins: [
        ...eligibilityRefs(),
        ...(roundRobinLoad ? refs('round-robin') : refs({ pluginRef: 'least-loaded', weight: 1 }, 'least-request')),
      ],
    },
    { name: 'affinity', plugins: [...eligibilityRefs(), ...affinityRefs, { pluginRef: 'max-score' }] },
    {
      name: 'cache-aware',
      plugins: [
        ...eligibilityRefs(),
        ...refs(
          hot && 'hotspot',
          'imbalance',
          weighted('prefix-cache', w.prefix),
          weighted('queue', w.queue),
          weighted('kv-usage', w.kvUsage),
          'max-score',
        ),
      ],
    },
  ];
  return { plugins, schedulingProfiles: profiles };
}

/**
 * The prefix index and the TTFT model, then one picker over their predictions: the
 * predicted-ttft picker (smallest predicted time to first token) or sticky-until-saturated.
 * No imbalance escape or queue scorer: queued prefill is inside the prediction.
 */
function ttftGraph(name: string, i: PresetInput, picker: PluginSpec): GraphSpec {
  return single(
    name,
    [prefixCacheSpec(i), { type: 'ttft-model' }, picker, calibrationSpec(i)],
    refs({ pluginRef: 'prefix-cache', weight: 1 }, picker.type),
  );
}

function predictedTtft(i: PresetInput): GraphSpec {
  return ttftGraph('predicted-ttft', i, { type: 'predicted-ttft' });
}

function stickyUntilSaturated(i: PresetInput): GraphSpec {
  return ttftGraph('sticky-until-saturated', i, { type: 'sticky-until-saturated-picker' });
}

const PRESETS: Readonly<Record<StrategyName, (i: PresetInput) => GraphSpec>> = {
  'round-robin': roundRobin,
  random,
  'least-request': leastRequest,
  'prefix-hash': prefixHash,
  'cache-aware': cacheAware,
  'bounded-load-hash': boundedLoadHash,
  'power-of-two': powerOfTwo,
  auto,
  'predicted-ttft': predictedTtft,
  'sticky-until-saturated': stickyUntilSaturated,
};

/** The plugin graph a `strategy:` shorthand stands for. */
export function presetGraph(strategy: StrategyName, input: PresetInput): GraphSpec {
  return PRESETS[strategy](input);
}
