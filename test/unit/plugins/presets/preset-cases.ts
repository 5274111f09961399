/**
 * The preset configurations whose decisions are pinned in test/fixtures/decisions/presets.json
 * (recorded when each was a `cacheAware:` / `load:` shorthand; they are written here as
 * `strategy:` adjustments, and auto-least-loaded, which no preset expresses, as the explicit
 * graph the shorthand expanded to, test/fixtures/presets/graphs-9d75293.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { defaultConfig, type ConfigOverrides } from '../../../../src/config/default-config.js';
import type { RouterConfig } from '../../../../src/config/types.js';
import { DEFAULT_TRACE, type TraceOptions } from './decision-trace.js';

export interface PresetCase {
  readonly name: string;
  readonly config: ConfigOverrides;
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

/** The plugin graphs the shorthand presets expanded to at 9d75293, with every parameter filled in by its plugin's schema. */
export interface RecordedGraph {
  readonly plugins: readonly { readonly type: string; readonly name: string; readonly parameters: Record<string, unknown> }[];
  readonly schedulingProfiles: readonly {
    readonly name: string;
    readonly plugins: readonly { readonly pluginRef: string; readonly weight?: number }[];
  }[];
}
export const RECORDED_GRAPHS = JSON.parse(
  readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'presets', 'graphs-9d75293.json'), 'utf8'),
) as Record<string, { readonly config: unknown; readonly graph: RecordedGraph }>;

function recordedGraph(name: string): Pick<RecordedGraph, 'plugins' | 'schedulingProfiles'> {
  const g = RECORDED_GRAPHS[name]!.graph;
  return { plugins: g.plugins, schedulingProfiles: g.schedulingProfiles };
}

export const PRESET_CASES: readonly PresetCase[] = [
  ...STRATEGIES.map((strategy) => ({ name: strategy, config: { strategy, endpoints: eps(4) }, trace: DEFAULT_TRACE })),
  {
    name: 'cache-aware-hotspot',
    config: {
      endpoints: eps(4),
      strategy: {
        name: 'cache-aware',
        plugins: { 'hotspot-replication-filter': { highWater: 2, lowWater: 1, minGroupShare: 0.3, minDwellMs: 500 } },
      },
    },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
  {
    name: 'cache-aware-session',
    config: { strategy: { name: 'cache-aware', plugins: { 'session-affinity-scorer': { header: 'x-session' } } }, endpoints: eps(4) },
    trace: { ...DEFAULT_TRACE, sessions: true },
  },
  {
    name: 'cache-aware-tokens',
    config: {
      strategy: {
        name: 'cache-aware',
        weights: { 'token-load-scorer': 1 },
        plugins: { 'imbalance-escape-filter': { absThreshold: 2, unit: 'tokens' }, 'queue-scorer': { signal: 'prefill', softQueue: 2 } },
      },
      endpoints: eps(4),
    },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
  {
    name: 'cache-aware-scores',
    config: {
      strategy: { name: 'cache-aware', weights: { 'kv-usage-scorer': 0 }, plugins: { 'cold-request-placement': false } },
      endpoints: eps(4),
    },
    trace: DEFAULT_TRACE,
  },
  {
    name: 'auto-8',
    config: {
      strategy: { name: 'auto', plugins: { hotspot: {}, auto: { minRequests: 5, minDwellMs: 500, evaluateIntervalMs: 100 } } },
      endpoints: eps(8),
    },
    trace: { ...DEFAULT_TRACE, requests: 400 },
  },
  {
    name: 'auto-least-loaded',
    config: { ...recordedGraph('auto-least-loaded'), endpoints: eps(4) },
    trace: DEFAULT_TRACE,
  },
  {
    name: 'bounded-load-tokens',
    config: {
      strategy: { name: 'bounded-load-hash', plugins: { 'bounded-load-hash-picker': { unit: 'tokens', epsilon: 0.1 } } },
      endpoints: eps(4),
    },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
  {
    name: 'power-of-two-tokens',
    config: { strategy: { name: 'power-of-two', plugins: { 'power-of-two-picker': { unit: 'tokens' } } }, endpoints: eps(4) },
    trace: { ...DEFAULT_TRACE, stepMs: 10 },
  },
];

export function caseConfig(c: PresetCase): RouterConfig {
  return defaultConfig(c.config);
}
