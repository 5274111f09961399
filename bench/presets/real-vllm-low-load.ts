/**
 * `real-vllm-low-load`: issue 13's low-load TTFT bar (cacheroute's TTFT p50 within 1.05× of
 * the best peer router's on the same engines) on 2 real vLLM CPU engines, measured so that
 * it can be decided: `real-vllm`'s two workloads at its lowest rate (1.5 req/s), 45 s per
 * run, each of cacheroute, sglang-router and vllm-router in 4 interleaved rounds with the
 * order rotated (C S V, S V C, V C S, C S V) so neither drift of the shared machine nor
 * position after an engine reset favours one contender. Round n draws its workload with
 * seed + n − 1, the same for every contender of the round: with one seed, which groups
 * burst together and how a router happened to split the groups over the two engines repeat
 * in every round (a partition is decided by the first requests and then held by affinity),
 * and that luck would be read as the router's merit. Envoy round-robin runs first in each
 * block: the first run after the engines start (the slowest in earlier presets) is then not
 * a contender's, and it shows what the Envoy hop alone costs. rounds.md pools the rounds
 * (bench/report/rounds.ts).
 */
import { SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE, cacheroute, ENVOY_RR } from './building-blocks.js';
import { REAL_ENGINE_POLLING, REAL_VLLM } from './real-vllm.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { ScenarioSpec } from '../workloads/scenario.js';
import type { EngineSetup, MatrixBlock, PresetSpec } from './types.js';

export const LOW_LOAD_QPS = 1.5;
export const LOW_LOAD_ROUNDS = 4;
const RUN_S = 45;

const ROTATION: readonly ContenderSpec[] = [cacheroute('cache-aware'), SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE];

/** Round n (from 1) of a rotation, each label suffixed `#n`. */
export function lowLoadRound(n: number, rotation: readonly ContenderSpec[] = ROTATION): ContenderSpec[] {
  const k = (n - 1) % rotation.length;
  return [...rotation.slice(k), ...rotation.slice(0, k)].map((c) => ({ ...c, label: `${c.label}#${n}` }));
}

const rounds = (count: number, rotation: readonly ContenderSpec[] = ROTATION): ContenderSpec[] =>
  Array.from({ length: count }, (_, i) => lowLoadRound(i + 1, rotation)).flat();

const CONTENDERS: ContenderSpec[] = [ENVOY_RR, ...rounds(LOW_LOAD_ROUNDS)];

const longer = (s: ScenarioSpec): ScenarioSpec => (s.kind === 'shared-prefix' || s.kind === 'agentic' ? { ...s, durationS: RUN_S } : s);

function lowLoad(block: MatrixBlock): MatrixBlock {
  return {
    ...block,
    routerOverrides: REAL_ENGINE_POLLING,
    scenarios: block.scenarios.map(longer),
    qpsSweep: [LOW_LOAD_QPS],
    contenders: CONTENDERS,
    seedPerRound: true,
  };
}

export const REAL_VLLM_LOW_LOAD: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-low-load',
  description: `Low load on 2 real vLLM CPU engines (KV 96 blocks): shared-prefix and agentic at ${LOW_LOAD_QPS} req/s, cacheroute vs sglang-router 0.3.2 vs vllm-router 0.1.17 in ${LOW_LOAD_ROUNDS} interleaved rounds (order rotated, seed + n − 1 in round n), Envoy round-robin first; rounds.md pools the rounds.`,
  estimatedMinutes: 24,
  blocks: REAL_VLLM.blocks.map(lowLoad),
};

/**
 * `real-vllm-low-load-quiet`: a diagnostic of the gap above on the agentic block (where both
 * routers reach the same token hit): cacheroute as above, the same router with no traffic of
 * its own to the engines (engine-metrics scrapes and active health checks off: a vLLM
 * /metrics page costs its API server ~13 ms of the thread that also serves requests), and
 * sglang-router, in 3 interleaved rounds with a seed each.
 */
const QUIET: ContenderSpec = {
  kind: 'cacheroute',
  label: 'cacheroute-cache-aware-quiet',
  strategy: 'cache-aware',
  routerOverrides: { engineMetrics: { enabled: false }, health: { enabled: false } },
};
const QUIET_ROTATION: readonly ContenderSpec[] = [cacheroute('cache-aware'), QUIET, SGLANG_CACHE_AWARE];
const QUIET_CONTENDERS: ContenderSpec[] = rounds(3, QUIET_ROTATION);

export const REAL_VLLM_LOW_LOAD_QUIET: PresetSpec = {
  ...REAL_VLLM_LOW_LOAD,
  name: 'real-vllm-low-load-quiet',
  description:
    "Diagnostic: real-vllm-low-load's agentic block with cacheroute, cacheroute without engine-metrics scrapes and health checks, and sglang-router, 3 interleaved rounds with a seed each.",
  estimatedMinutes: 9,
  blocks: [{ ...(REAL_VLLM_LOW_LOAD.blocks[1] as MatrixBlock), contenders: QUIET_CONTENDERS }],
};

/** Niceness of the engines in real-vllm-low-load-priority's second half. */
export const LOW_PRIORITY_ENGINE_NICE = 10;

/**
 * `real-vllm-low-load-priority`: is the gap above the router's, or the machine's? Here the 2
 * CPU engines share 2 cores with Envoy, the routers and the load generator, so every process
 * a request crosses must wait for a core the engines are busy on; Envoy + cacheroute is two
 * processes where sglang-router is one. Both workloads, cacheroute and sglang-router (the
 * best peer in every earlier run) in 3 interleaved rounds with a seed each, first with the
 * engines at the default priority, then with the same engines at niceness
 * LOW_PRIORITY_ENGINE_NICE (every router, Envoy and the load generator preempt them, as when
 * engines run on hardware of their own). Envoy round-robin runs first in each half, as
 * above. Each half is its own block with its own rounds:
 * compare the ratios, not the absolute TTFTs (the engines run slower when preempted).
 */
const PRIORITY_ROTATION: readonly ContenderSpec[] = [cacheroute('cache-aware'), SGLANG_CACHE_AWARE];

function priorityBlock(block: MatrixBlock, nice: number): MatrixBlock {
  const base = lowLoad(block);
  // Envoy round-robin first, as above: the first run after the engines start is not a contender's.
  const contenders = [ENVOY_RR, ...rounds(3, PRIORITY_ROTATION)];
  if (nice === 0) return { ...base, contenders };
  const vllm = { ...(block.engines.vllm ?? {}), nice };
  return {
    ...base,
    name: `${block.name}-engines-nice${nice}`,
    engines: {
      ...block.engines,
      label: `${block.engines.label}-nice${nice}`,
      vllm,
      rationale: `${block.engines.rationale} Engines at niceness ${nice}.`,
    },
    contenders,
  };
}

export const REAL_VLLM_LOW_LOAD_PRIORITY: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-low-load-priority',
  description: `Diagnostic: real-vllm-low-load's two workloads, cacheroute vs sglang-router in 3 interleaved rounds with a seed each, with the engines at the default priority and then at niceness ${LOW_PRIORITY_ENGINE_NICE}.`,
  estimatedMinutes: 28,
  blocks: [...REAL_VLLM.blocks.map((b) => priorityBlock(b, 0)), ...REAL_VLLM.blocks.map((b) => priorityBlock(b, LOW_PRIORITY_ENGINE_NICE))],
};

/** The ext_proc-hop control: sglang-router (cache_aware) behind Envoy and a do-nothing processor. */
export const SGLANG_BEHIND_NULL_HOP: ContenderSpec = {
  kind: 'null-hop',
  label: 'sglang-cache_aware-behind-null-hop',
  inner: { kind: 'sglang-router', label: 'sglang-cache_aware', policy: 'cache_aware' },
};

/** The same control with the processor in Go (grpc-go): the hop on a compiled runtime. */
export const SGLANG_BEHIND_NULL_HOP_GO: ContenderSpec = {
  ...SGLANG_BEHIND_NULL_HOP,
  label: 'sglang-cache_aware-behind-null-hop-go',
  processor: 'go',
};

/**
 * `real-vllm-low-load-hop`: how much of the gap above is the ext_proc hop itself? Both
 * workloads at the default priority, in 3 interleaved rounds with a seed each: cacheroute,
 * sglang-router, and sglang-router with the ext_proc hop put in front of it (Envoy's shipped
 * override-host config consulting a processor that decides nothing: same library, codec and
 * message exchange as cacheroute; bench/contenders/null-processor.ts). The control's
 * placement and cache hits are sglang-router's own, so its ratio to sglang-router is what the
 * hop costs in this workload on this machine; cacheroute's ratio beside it says how much of
 * cacheroute's gap is left for its routing. Envoy round-robin runs first in each block, as above.
 */
const HOP_ROTATION: readonly ContenderSpec[] = [cacheroute('cache-aware'), SGLANG_CACHE_AWARE, SGLANG_BEHIND_NULL_HOP];

export const REAL_VLLM_LOW_LOAD_HOP: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-low-load-hop',
  description: `Diagnostic: real-vllm-low-load's two workloads, cacheroute vs sglang-router vs sglang-router behind Envoy and a do-nothing ext_proc processor, in 3 interleaved rounds with a seed each.`,
  estimatedMinutes: 24,
  blocks: REAL_VLLM.blocks.map((b) => ({ ...lowLoad(b), contenders: [ENVOY_RR, ...rounds(3, HOP_ROTATION)] })),
};

/**
 * `real-vllm-low-load-hop-go`: the same with the hop's processor also in Go (grpc-go; built
 * with `go build` on first use): is what the hop costs the ext_proc exchange itself, or the
 * Node runtime the processor runs on? Four contenders in 3 rotated rounds per workload.
 */
const HOP_GO_ROTATION: readonly ContenderSpec[] = [
  cacheroute('cache-aware'),
  SGLANG_CACHE_AWARE,
  SGLANG_BEHIND_NULL_HOP,
  SGLANG_BEHIND_NULL_HOP_GO,
];

export const REAL_VLLM_LOW_LOAD_HOP_GO: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-low-load-hop-go',
  description: `Diagnostic: real-vllm-low-load's two workloads, cacheroute vs sglang-router vs sglang-router behind Envoy and a do-nothing ext_proc processor in Node and in Go, in 3 interleaved rounds with a seed each.`,
  estimatedMinutes: 31,
  blocks: REAL_VLLM.blocks.map((b) => ({ ...lowLoad(b), contenders: [ENVOY_RR, ...rounds(3, HOP_GO_ROTATION)] })),
};

/** The core every engine runs on in real-vllm-low-load-split; the routing tier gets the other. */
export const SPLIT_ENGINE_CORE = 1;
export const SPLIT_ROUTING_TIER_CORE = 0;

/** An engine setup with every engine on SPLIT_ENGINE_CORE and the routing tier on SPLIT_ROUTING_TIER_CORE. */
export function splitEngines(engines: EngineSetup): EngineSetup {
  return {
    ...engines,
    label: `${engines.label}-split`,
    vllm: { ...(engines.vllm ?? {}), sharedCore: SPLIT_ENGINE_CORE },
    routingTierCore: SPLIT_ROUTING_TIER_CORE,
    rationale: `${engines.rationale} Both engines on core ${SPLIT_ENGINE_CORE}; Envoy, the routers and the load generator on core ${SPLIT_ROUTING_TIER_CORE}.`,
  };
}

/**
 * `real-vllm-low-load-split`: `real-vllm-low-load` as it is (both workloads, cacheroute,
 * sglang-router and vllm-router in 4 rotated rounds, Envoy round-robin first) on the machine
 * split in two: both engines on core SPLIT_ENGINE_CORE, the harness and everything it starts
 * (Envoy, every router, the load generator) on core SPLIT_ROUTING_TIER_CORE. In the default
 * preset a vLLM CPU worker busy-polls for a second after each step, so at 1.5 req/s both cores
 * are always busy and every process a request crosses waits for one: two processes for
 * Envoy + cacheroute, one for a peer router. Split, the routing tier has a core of its own,
 * as where engines run on accelerators on hosts of their own; the engines are slower (one
 * core for two), which every contender meets alike.
 */
export const REAL_VLLM_LOW_LOAD_SPLIT: PresetSpec = {
  ...REAL_VLLM_LOW_LOAD,
  name: 'real-vllm-low-load-split',
  description: `real-vllm-low-load (cacheroute vs sglang-router vs vllm-router, ${LOW_LOAD_ROUNDS} rotated rounds per workload at ${LOW_LOAD_QPS} req/s) with both engines on core ${SPLIT_ENGINE_CORE} and the routing tier (Envoy, routers, load generator) on core ${SPLIT_ROUTING_TIER_CORE}.`,
  estimatedMinutes: 28,
  blocks: REAL_VLLM.blocks.map((b) => ({ ...lowLoad(b), engines: splitEngines(b.engines) })),
};

/** An engine setup whose engines run their model worker inside the engine-core process. */
export function inProcessWorkerEngines(engines: EngineSetup): EngineSetup {
  return {
    ...engines,
    label: `${engines.label}-inproc`,
    vllm: { ...(engines.vllm ?? {}), inProcessWorker: true },
    rationale: `${engines.rationale} Each engine's model worker runs inside its engine-core process (vLLM's uniprocess executor), so no worker busy-polls a core between requests.`,
  };
}

/**
 * `real-vllm-low-load-inproc`: `real-vllm-low-load` as it is (both workloads, cacheroute,
 * sglang-router and vllm-router in 4 rotated rounds, Envoy round-robin first, every process on
 * both cores) with each engine's model worker inside its engine-core process. vLLM's CPU
 * platform puts the worker in a process of its own whose queue reader spins for a second
 * after every step, so at 1.5 req/s the engines keep both cores busy whether or not they
 * have work; in-process, an engine between requests sleeps, as an accelerator-backed
 * engine's host cores would be free for the routing tier. Same engines, same model and
 * flags for every contender.
 */
export const REAL_VLLM_LOW_LOAD_INPROC: PresetSpec = {
  ...REAL_VLLM_LOW_LOAD,
  name: 'real-vllm-low-load-inproc',
  description: `real-vllm-low-load (cacheroute vs sglang-router vs vllm-router, ${LOW_LOAD_ROUNDS} rotated rounds per workload at ${LOW_LOAD_QPS} req/s) with each engine's model worker inside its engine-core process (no busy-polling worker).`,
  estimatedMinutes: 24,
  blocks: REAL_VLLM.blocks.map((b) => ({ ...lowLoad(b), engines: inProcessWorkerEngines(b.engines) })),
};

/**
 * `real-vllm-low-load-inproc-hop`: where the rest of the agentic gap goes with in-process
 * engines. The agentic block of `real-vllm-low-load-inproc`, Envoy round-robin first, then in
 * 3 rotated rounds with a seed each: cacheroute, cacheroute with no traffic of its own to the
 * engines (no engine-metrics scrapes, no active health checks), sglang-router, and
 * sglang-router behind Envoy and the do-nothing ext_proc processor (the hop alone).
 */
const INPROC_HOP_ROTATION: readonly ContenderSpec[] = [cacheroute('cache-aware'), QUIET, SGLANG_CACHE_AWARE, SGLANG_BEHIND_NULL_HOP];

export const REAL_VLLM_LOW_LOAD_INPROC_HOP: PresetSpec = {
  ...REAL_VLLM_LOW_LOAD_INPROC,
  name: 'real-vllm-low-load-inproc-hop',
  description:
    "Diagnostic: real-vllm-low-load-inproc's agentic block with cacheroute, cacheroute without engine-metrics scrapes and health checks, sglang-router, and sglang-router behind Envoy and a do-nothing ext_proc processor, 3 rotated rounds with a seed each.",
  estimatedMinutes: 13,
  blocks: [{ ...(REAL_VLLM_LOW_LOAD_INPROC.blocks[1] as MatrixBlock), contenders: [ENVOY_RR, ...rounds(3, INPROC_HOP_ROTATION)] }],
};
