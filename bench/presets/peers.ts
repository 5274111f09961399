/**
 * `peers`: our router against SGLang's and vLLM's routers (cache_aware policy, their own
 * proxies) and Envoy alone (round-robin, least-request), in front of the same 4 engines,
 * on the Moreh shared-prefix shape scaled to this machine, over a QPS sweep up to and
 * past saturation. A second block measures added latency at low load with no sharing.
 *
 * Shape: Moreh ran 230 groups × 5 prompts, 8,000 + 1,000 input and 1,000 output tokens.
 * Here: 48 groups × 5 (group count × 0.21), 1,600 + 200 input (× 0.2), 32 output tokens
 * (decode is scaled much harder: every output token is an SSE event through Envoy and the
 * client, and on 2 CPU cores events, not prefill, would otherwise set the ceiling).
 * KV per engine = 1.25 × (48 × 1,800 tokens ÷ 4) + ~6 running prompts (see seed-table for
 * why the working set counts whole prompts).
 * Engines run at time-scale 3 (steps ≥ 24 ms) so the cache-aware contenders reach
 * saturation inside the sweep; Envoy alone (saturated below 8 req/s) stops at 16.
 * cache-aware runs twice per rate: at the shipped defaults and with hot-prefix replication
 * (`strategy.plugins.hotspot-replication-filter`, off by default) switched on.
 * Each rate runs 20 s (requests = rate × 20) after an unmeasured warm-up of one request
 * per group at 16 req/s.
 */
import {
  BENCH_MODEL,
  CACHE_AWARE_HOTSPOT_ON,
  cacheroute,
  ENVOY_LR,
  ENVOY_RR,
  engineSetup,
  kvBlocksFor,
  SGLANG_CACHE_AWARE,
  VLLM_CACHE_AWARE,
} from './building-blocks.js';
import type { PresetSpec } from './types.js';

const ENGINES = 4;
const GROUPS = 48;
const SYSTEM = 1600;
const QUESTION = 200;
/** LRU working set: every group's latest full prompt (prefix + the unique question cached with it). */
const WORKING_SET = GROUPS * (SYSTEM + QUESTION);
const KV = kvBlocksFor({ hotSetTokens: WORKING_SET, engines: ENGINES, factor: 1.25, inflightTokens: 6 * (SYSTEM + QUESTION) });

export const PEERS_SWEEP_QPS = [4, 8, 16, 24] as const;

export const PEERS: PresetSpec = {
  name: 'peers',
  description:
    'cacheroute (cache-aware, behind Envoy) vs sglang-router 0.3.2 and vllm-router 0.1.17 (cache_aware) vs Envoy alone (round-robin, least-request) on 4 simulated engines: Moreh-shaped shared-prefix workload scaled down, QPS sweep 4–24 req/s; plus a low-load no-sharing block for added latency.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 16,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 90_000 },
  blocks: [
    {
      name: 'qps-sweep',
      engines: engineSetup(
        `4x-kv${KV}-ts3`,
        ENGINES,
        { 'kv-cache-blocks': KV, 'time-scale': 3 },
        `Moreh shape scaled; KV = 1.25 × (working set ${GROUPS} groups × ${SYSTEM + QUESTION} tok ÷ ${ENGINES}) + 6 running prompts; engine model: simulator defaults (~8B on H100) at time-scale 3, so that the cache-aware contenders saturate within the sweep while the client stays far below the CPU limit.`,
      ),
      scenarios: [
        {
          kind: 'shared-prefix',
          label: 'moreh-scaled',
          groups: GROUPS,
          promptsPerGroup: 5,
          systemPromptTokens: SYSTEM,
          questionTokens: QUESTION,
          outputTokens: 32,
          durationS: 20,
          warmupPerGroup: 1,
          warmupQps: 16,
          arrival: { kind: 'poisson', qps: 8 },
        },
      ],
      qpsSweep: [...PEERS_SWEEP_QPS],
      // cache-aware at the shipped defaults and with hot-prefix replication on, side by side:
      // whether replication stays harmless on evenly spread prefixes.
      contenders: [cacheroute('cache-aware'), CACHE_AWARE_HOTSPOT_ON, SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE, ENVOY_RR, ENVOY_LR],
      // Envoy alone saturates well inside the sweep; 16 req/s already shows its collapse.
      contenderMaxQps: { [ENVOY_RR.label]: 16, [ENVOY_LR.label]: 16 },
    },
    {
      name: 'overhead',
      engines: engineSetup(
        `4x-kv${KV}-ts3`,
        ENGINES,
        { 'kv-cache-blocks': KV, 'time-scale': 3 },
        'Same engines; short prompts, no sharing, 2 req/s: TTFT is engine time plus proxy time.',
      ),
      scenarios: [
        {
          kind: 'sharing-ratio',
          label: 'no-sharing-2rps',
          ratio: 0,
          promptTokens: 256,
          groups: 1,
          requests: 40,
          outputTokens: 16,
          arrival: { kind: 'constant', qps: 2 },
        },
      ],
      contenders: [
        cacheroute('round-robin'),
        ENVOY_RR,
        { kind: 'sglang-router', label: 'sglang-round_robin', policy: 'round_robin' },
        { kind: 'vllm-router', label: 'vllm-round_robin', policy: 'round_robin' },
      ],
    },
  ],
};
