/**
 * `real-vllm-low-load`: issue 13's low-load TTFT bar (cacheroute's TTFT p50 within 1.05× of
 * the best peer router's on the same engines) on 2 real vLLM CPU engines, measured so that
 * it can be decided: `real-vllm`'s two workloads at its lowest rate (1.5 req/s), 45 s per
 * run, each of cacheroute, sglang-router and vllm-router in 4 interleaved rounds with the
 * order rotated (C S V, S V C, V C S, C S V) so neither drift of the shared machine nor
 * position after an engine reset favours one contender. Round n draws its workload with
 * seed + n − 1, the same for every contender of the round: with one seed, which groups
 * burst together and how a router happened to split the groups over the two engines repeat
 * in every round, and that luck would be read as the router's merit. Envoy round-robin runs
 * first in each block: the first run after the engines start is then not a contender's, and
 * it shows what the Envoy hop alone costs. rounds.md pools the rounds (bench/report/rounds.ts).
 *
 * By default each engine runs its model worker inside its engine-core process: vLLM's CPU
 * worker otherwise busy-polls a core for a second after every step, so at 1.5 req/s both
 * cores stay busy and every process a request crosses waits for one (decision 0208 has the
 * investigation). The options reproduce its other settings:
 *
 *   --option engines=shared|split      the stock engines on both cores, or both engines on
 *                                      core 1 and the routing tier on core 0
 *   --option nice=10                   the engines at that niceness
 *   --option controls=quiet|hop|quiet+hop   add cacheroute without engine scrapes and health
 *                                      checks, and/or sglang-router behind Envoy and a
 *                                      do-nothing ext_proc processor (the hop alone)
 *   --option rounds=3  --option workloads=agentic|shared-prefix
 */
import { SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE, cacheroute, ENVOY_RR } from './building-blocks.js';
import { REAL_ENGINE_POLLING, REAL_VLLM } from './real-vllm.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { ScenarioSpec } from '../workloads/scenario.js';
import type { EngineSetup, MatrixBlock, PresetOption, PresetSpec } from './types.js';

export const LOW_LOAD_QPS = 1.5;
export const LOW_LOAD_ROUNDS = 4;
const RUN_S = 45;
/** Minutes per contender run of one block, measured (45 s plus resets, start and drain). */
const MINUTES_PER_RUN = 1;

/** cacheroute with no traffic of its own to the engines (no engine-metrics scrapes, no active health checks). */
export const QUIET: ContenderSpec = {
  kind: 'cacheroute',
  label: 'cacheroute-cache-aware-quiet',
  strategy: 'cache-aware',
  routerOverrides: { engineMetrics: { enabled: false }, health: { enabled: false } },
};

/** The ext_proc-hop control: sglang-router (cache_aware) behind Envoy and a do-nothing processor. */
export const SGLANG_BEHIND_NULL_HOP: ContenderSpec = {
  kind: 'null-hop',
  label: 'sglang-cache_aware-behind-null-hop',
  inner: { kind: 'sglang-router', label: 'sglang-cache_aware', policy: 'cache_aware' },
};

/** Round n (from 1) of a rotation, each label suffixed `#n`. */
export function lowLoadRound(n: number, rotation: readonly ContenderSpec[]): ContenderSpec[] {
  const k = (n - 1) % rotation.length;
  return [...rotation.slice(k), ...rotation.slice(0, k)].map((c) => ({ ...c, label: `${c.label}#${n}` }));
}

/** The core every engine runs on with `engines=split`; the routing tier gets the other. */
export const SPLIT_ENGINE_CORE = 1;
export const SPLIT_ROUTING_TIER_CORE = 0;

function placedEngines(engines: EngineSetup, placement: string, nice: number): EngineSetup {
  let e = engines;
  if (placement === 'inproc')
    e = {
      ...e,
      label: `${e.label}-inproc`,
      vllm: { ...(e.vllm ?? {}), inProcessWorker: true },
      rationale: `${e.rationale} Each engine's model worker runs inside its engine-core process (vLLM's uniprocess executor), so no worker busy-polls a core between requests.`,
    };
  if (placement === 'split')
    e = {
      ...e,
      label: `${e.label}-split`,
      vllm: { ...(e.vllm ?? {}), sharedCore: SPLIT_ENGINE_CORE },
      routingTierCore: SPLIT_ROUTING_TIER_CORE,
      rationale: `${e.rationale} Both engines on core ${SPLIT_ENGINE_CORE}; Envoy, the routers and the load generator on core ${SPLIT_ROUTING_TIER_CORE}.`,
    };
  if (nice > 0)
    e = {
      ...e,
      label: `${e.label}-nice${nice}`,
      vllm: { ...(e.vllm ?? {}), nice },
      rationale: `${e.rationale} Engines at niceness ${nice}.`,
    };
  return e;
}

export const LOW_LOAD_OPTIONS: readonly PresetOption[] = [
  {
    name: 'engines',
    default: 'inproc',
    values: ['inproc', 'shared', 'split'],
    description: 'inproc: model worker in the engine-core process; shared: stock engines; split: engines on core 1, routing tier on core 0',
  },
  { name: 'nice', default: '0', integer: { min: 0, max: 19 }, description: "the engines' niceness" },
  {
    name: 'controls',
    default: 'none',
    values: ['none', 'quiet', 'hop', 'quiet+hop'],
    description: 'add cacheroute without engine scrapes/health checks (quiet), sglang-router behind a do-nothing ext_proc hop (hop)',
  },
  { name: 'rounds', default: String(LOW_LOAD_ROUNDS), integer: { min: 1, max: 8 }, description: 'interleaved rounds per block' },
  { name: 'workloads', default: 'both', values: ['both', 'shared-prefix', 'agentic'], description: "which of real-vllm's workloads" },
];

const longer = (s: ScenarioSpec): ScenarioSpec => (s.kind === 'shared-prefix' || s.kind === 'agentic' ? { ...s, durationS: RUN_S } : s);

/** The preset for chosen options (all given; bench/presets/options.ts checks and completes them). */
export function realVllmLowLoad(chosen: Readonly<Record<string, string>>): PresetSpec {
  const get = (name: string): string => chosen[name] ?? (LOW_LOAD_OPTIONS.find((o) => o.name === name)?.default as string);
  const controls = get('controls');
  const rotation: ContenderSpec[] = [cacheroute('cache-aware'), SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE];
  if (controls.includes('quiet')) rotation.push(QUIET);
  if (controls.includes('hop')) rotation.push(SGLANG_BEHIND_NULL_HOP);
  const rounds = Number(get('rounds'));
  const contenders = [ENVOY_RR, ...Array.from({ length: rounds }, (_, i) => lowLoadRound(i + 1, rotation)).flat()];
  const workloads = get('workloads');
  const blocks = REAL_VLLM.blocks
    .filter((b) => workloads === 'both' || b.name === workloads)
    .map(
      (b): MatrixBlock => ({
        ...b,
        engines: placedEngines(b.engines, get('engines'), Number(get('nice'))),
        routerOverrides: REAL_ENGINE_POLLING,
        scenarios: b.scenarios.map(longer),
        qpsSweep: [LOW_LOAD_QPS],
        contenders,
        seedPerRound: true,
      }),
    );
  const changed = LOW_LOAD_OPTIONS.filter((o) => get(o.name) !== o.default).map((o) => `${o.name}=${get(o.name)}`);
  return {
    ...REAL_VLLM,
    name: 'real-vllm-low-load',
    description: `Low load on 2 real vLLM CPU engines (KV 96 blocks, model worker in the engine-core process unless --option engines=…): shared-prefix and agentic at ${LOW_LOAD_QPS} req/s, cacheroute vs sglang-router 0.3.2 vs vllm-router 0.1.17 in ${rounds} interleaved rounds (order rotated, seed + n − 1 in round n), Envoy round-robin first; rounds.md pools the rounds.${changed.length > 0 ? ` Options: ${changed.join(', ')}.` : ''}`,
    estimatedMinutes: Math.ceil(blocks.length * contenders.length * MINUTES_PER_RUN),
    blocks,
    options: LOW_LOAD_OPTIONS,
    withOptions: realVllmLowLoad,
    chosenOptions: Object.fromEntries(LOW_LOAD_OPTIONS.map((o) => [o.name, get(o.name)])),
  };
}

export const REAL_VLLM_LOW_LOAD: PresetSpec = realVllmLowLoad({});
