/** The preset configurations whose decisions are pinned in test/fixtures/decisions/presets.json. */
import { defaultConfig, type DeepPartial } from '../../../../src/config/default-config.js';
import type { RouterConfig } from '../../../../src/config/types.js';
import { DEFAULT_TRACE, type TraceOptions } from './decision-trace.js';

export interface PresetCase {
  readonly name: string;
  readonly config: DeepPartial<RouterConfig>;
  readonly trace: TraceOptions;
}

function eps(n: number): { address: string }[] {
  return Array.from({ length: n }, (_, i) => ({ address: `127.0.0.1:${9001 + i}` }));
}

const STRATEGIES = [
  'round-robin',
  'random',
  'least-request',
  'prefix-hash',
  'cache-aware',
  'bounded-load-hash',
  'power-of-two',
  'auto',
] as const;

export const PRESET_CASES: readonly PresetCase[] = [
  ...STRATEGIES.map((strategy) => ({ name: strategy, config: { strategy, endpoints: eps(4) }, trace: DEFAULT_TRACE })),
  {
    name: 'cache-aware-hotspot',
    config: {
      strategy: 'cache-aware',
      endpoints: eps(4),
      load: { hotspot: { enabled: true, highWater: 2, lowWater: 1, minGroupShare: 0.3, minDwellMs: 500 } },
    },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
  {
    name: 'cache-aware-session',
    config: { strategy: 'cache-aware', endpoints: eps(4), requests: { sessionHeader: 'x-session' } },
    trace: { ...DEFAULT_TRACE, sessions: true },
  },
  {
    name: 'cache-aware-tokens',
    config: {
      strategy: 'cache-aware',
      endpoints: eps(4),
      load: { unit: 'tokens', tokenLoadWeight: 1 },
      cacheAware: { queueSignal: 'prefill', imbalance: { absThreshold: 2 } },
    },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
  {
    name: 'cache-aware-scores',
    config: { strategy: 'cache-aware', endpoints: eps(4), cacheAware: { coldRouting: 'scores', weights: { kvUsage: 0 } } },
    trace: DEFAULT_TRACE,
  },
  {
    name: 'auto-8',
    config: {
      strategy: 'auto',
      endpoints: eps(8),
      load: { hotspot: { enabled: true }, auto: { minRequests: 5, minDwellMs: 500, evaluateIntervalMs: 100 } },
    },
    trace: { ...DEFAULT_TRACE, requests: 400 },
  },
  {
    name: 'auto-least-loaded',
    config: {
      strategy: 'auto',
      endpoints: eps(4),
      load: { auto: { loadMode: 'least-loaded', minRequests: 5, minDwellMs: 300, lowReuse: 0.6, highReuse: 0.9 } },
    },
    trace: DEFAULT_TRACE,
  },
  {
    name: 'bounded-load-tokens',
    config: { strategy: 'bounded-load-hash', endpoints: eps(4), load: { unit: 'tokens', boundedLoad: { epsilon: 0.1 } } },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
  {
    name: 'power-of-two-tokens',
    config: { strategy: 'power-of-two', endpoints: eps(4), load: { unit: 'tokens' } },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
];

export function caseConfig(c: PresetCase): RouterConfig {
  return defaultConfig(c.config);
}
