/**
 * `replicas`: several cacheroute replicas behind one real Envoy, sharing state over a real
 * nats-server (JetStream), on 4 simulated engines under KV pressure, with faults injected
 * mid-load. Blocks (each bar of issue 13's proof; bench/report/replica-bars.ts checks them):
 *
 * 1. scale      1 replica (no NATS) vs 3 replicas (NATS), same engines, workload and seed.
 * 2. kill       3 replicas; replica r1 SIGKILLed at 10 s, started again at 20 s.
 * 3. fail-open  1 replica, ext_proc fail-open; SIGKILLed at 10 s (long answers are then
 *               streaming), started again at 20 s.
 * 4. nats       3 replicas; nats-server stopped at 10 s, started again at 30 s.
 * 5. cpu        router CPU per routed request, a baseline's request path (router and Envoy
 *               config of another commit, `CACHEROUTE_BASELINE_CHECKOUT`: a built checkout's
 *               directory or a commit, default 061ba1c — the commit issue #25's bars compare
 *               against — built under .run/ by bench/bars/baseline-build.ts when first used;
 *               labelled `main-*`) vs this build, one replica each, ABAB; each run first
 *               measures the router's CPU with no traffic for 10 s.
 * 6. low-load   TTFT at 2 req/s: this build vs sglang-router 0.3.2 and vllm-router 0.1.17
 *               (cache_aware) and main's build.
 *
 * Workload (blocks 1, 2, 4, 5): agentic sessions (bench/workloads/agentic-sessions.ts): 8
 * tenants with 1,000-token system prompts, Zipf s 1.1; sessions of a task and 3 tool calls
 * whose history grows to ~1,900 tokens; 15% one-off 1,200-token prompts; 24 output tokens;
 * Poisson 8 req/s for 40 s. Each engine holds 1.25 × its quarter of the hot set (tenant
 * prompts + the live sessions' histories): a router that sends a session's next turn
 * elsewhere, or spreads tenants everywhere, evicts and misses. Block 3 uses the same
 * sessions with 96 output tokens, so that many answers are mid-stream at the kill.
 * Blocks 1–4 turn the decision header on (`replica=` names the deciding replica when the
 * router reports one) to check each replica's predicted hits against the engines'
 * cached_tokens; blocks 5–6 run without it, as deployed.
 */
import type { ContenderSpec, RouterOverrides } from '../contenders/types.js';
import type { ScenarioSpec } from '../workloads/scenario.js';
import { BENCH_MODEL, engineSetup, kvBlocksFor, SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE } from './building-blocks.js';
import type { FaultStep, MatrixBlock, PresetSpec } from './types.js';

const ENGINES = 4;
const TENANTS = 8;
const SYSTEM = 1000;
const SESSION_TOKENS = SYSTEM + 100 + 3 * (30 + 200);
/** Tenant prompts plus ~8 live sessions' histories. */
const HOT_SET = TENANTS * SYSTEM + 8 * SESSION_TOKENS;
const KV = kvBlocksFor({ hotSetTokens: HOT_SET, engines: ENGINES, factor: 1.25, inflightTokens: 4 * SESSION_TOKENS });

/** When faults start, how long a replica stays down, how long NATS stays down (ms into the run). */
export const REPLICA_FAULTS = { killAtMs: 10_000, downMs: 10_000, natsStopAtMs: 10_000, natsDownMs: 20_000 } as const;

/** The baseline's request path: a built checkout's directory or a commit of this repository. */
export const BASELINE_CHECKOUT = process.env['CACHEROUTE_BASELINE_CHECKOUT'] ?? '061ba1c';

type AgenticSpec = Extract<ScenarioSpec, { kind: 'agentic' }>;

export const AGENTIC_ENGINES = engineSetup(
  `4x-kv${KV}`,
  ENGINES,
  { 'kv-cache-blocks': KV },
  `KV = 1.25 × (hot set ${HOT_SET} tok ÷ ${ENGINES}: ${TENANTS} tenant prompts + ~8 live session histories) + 4 running sessions; simulator defaults at time-scale 2.`,
);

const DECISION_HEADER: RouterOverrides = { telemetry: { decisionHeader: true } };

const one = (label: string, over: Partial<Extract<ContenderSpec, { kind: 'cacheroute' }>> = {}): ContenderSpec => ({
  kind: 'cacheroute',
  label,
  strategy: 'cache-aware',
  ...over,
});
const three = (label: string): ContenderSpec => one(label, { replicas: 3, replication: 'nats' });

/** SIGKILL replica `replica` at the kill time, start it again `downMs` later (times × `scale`). */
export function killFaults(replica: number, scale = 1): FaultStep[] {
  return [
    { atMs: REPLICA_FAULTS.killAtMs * scale, action: 'kill-replica', replica },
    { atMs: (REPLICA_FAULTS.killAtMs + REPLICA_FAULTS.downMs) * scale, action: 'restart-replica', replica },
  ];
}

/** Stop nats-server at its stop time, start it again `natsDownMs` later (times × `scale`). */
export function natsFaults(scale = 1): FaultStep[] {
  return [
    { atMs: REPLICA_FAULTS.natsStopAtMs * scale, action: 'stop-nats' },
    { atMs: (REPLICA_FAULTS.natsStopAtMs + REPLICA_FAULTS.natsDownMs) * scale, action: 'start-nats' },
  ];
}

/** Agentic sessions on the tenants above (Poisson 8 req/s, 40 s unless overridden): the replicas' and the agentic preset's workload. */
export const agenticSessions = (label: string, over: Partial<AgenticSpec> = {}): ScenarioSpec => ({
  kind: 'agentic',
  label,
  api: 'chat',
  tenants: TENANTS,
  zipfS: 1.1,
  systemPromptTokens: SYSTEM,
  taskTokens: 100,
  toolCalls: 3,
  toolCallTokens: 30,
  toolResultTokens: 200,
  oneOffShare: 0.15,
  oneOffTokens: 1200,
  outputTokens: 24,
  thinkMs: 300,
  arrival: { kind: 'poisson', qps: 8 },
  durationS: 40,
  ...over,
});

/** The blocks with every duration and fault time multiplied by `scale` (1 = the bars). */
export function replicaBlocks(scale: number): MatrixBlock[] {
  const agentic = (label: string, over: Partial<AgenticSpec> = {}): ScenarioSpec =>
    agenticSessions(label, { ...over, durationS: (over.durationS ?? 40) * scale });
  return [
    {
      name: 'scale',
      engines: AGENTIC_ENGINES,
      scenarios: [agentic('agentic-8rps')],
      contenders: [one('replicas-1'), three('replicas-3')],
      routerOverrides: DECISION_HEADER,
    },
    {
      name: 'kill',
      engines: AGENTIC_ENGINES,
      scenarios: [agentic('agentic-8rps')],
      contenders: [three('replicas-3-kill-r1')],
      routerOverrides: DECISION_HEADER,
      faults: killFaults(1, scale),
    },
    {
      name: 'fail-open',
      engines: AGENTIC_ENGINES,
      scenarios: [agentic('agentic-long-answers', { outputTokens: 96, durationS: 30 })],
      contenders: [one('replicas-1-fail-open-kill', { failOpen: true })],
      routerOverrides: DECISION_HEADER,
      faults: killFaults(0, scale),
    },
    {
      name: 'nats',
      engines: AGENTIC_ENGINES,
      scenarios: [agentic('agentic-8rps', { durationS: 45 })],
      contenders: [three('replicas-3-nats-down')],
      routerOverrides: DECISION_HEADER,
      faults: natsFaults(scale),
    },
    {
      name: 'cpu',
      engines: AGENTIC_ENGINES,
      scenarios: [agentic('agentic-8rps', { durationS: 30 })],
      contenders: [
        one('main-a', { checkout: BASELINE_CHECKOUT }),
        one('this-a'),
        one('main-b', { checkout: BASELINE_CHECKOUT }),
        one('this-b'),
      ],
      // The routers' CPU with no traffic (engine polling, timers), to show what the requests add.
      idleCpuMs: 10000,
    },
    {
      name: 'low-load',
      engines: AGENTIC_ENGINES,
      scenarios: [agentic('agentic-2rps', { durationS: 30, arrival: { kind: 'poisson', qps: 2 } })],
      contenders: [one('this-build'), SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE, one('main-build', { checkout: BASELINE_CHECKOUT })],
    },
  ];
}

export const REPLICAS: PresetSpec = {
  name: 'replicas',
  description:
    'Router replicas behind one Envoy, sharing state over NATS (JetStream), on 4 simulated engines under KV pressure (agentic sessions, Zipf tenants, one-offs): 1 vs 3 replicas; SIGKILL of 1 of 3 with restart 10 s later; SIGKILL of a single fail-open replica mid-stream; NATS down for 20 s; router CPU per request vs the request path of 061ba1c (or CACHEROUTE_BASELINE_CHECKOUT); TTFT at low load vs sglang-router and vllm-router.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 12,
  budget: { requestTimeoutMs: 30_000, maxRunMs: 70_000 },
  blocks: replicaBlocks(1),
};

/** The same runs at 0.4× the durations and fault times: checks that everything starts and measures (not the bars). */
export const REPLICAS_SMOKE: PresetSpec = {
  ...REPLICAS,
  name: 'replicas-smoke',
  description: `Smoke version of replicas (durations and fault times × 0.4; not the bars). ${REPLICAS.description}`,
  estimatedMinutes: 6,
  blocks: replicaBlocks(0.4),
};
