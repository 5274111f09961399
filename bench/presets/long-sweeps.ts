/**
 * Opt-in presets that take longer than the default ones (run them when the machine is
 * otherwise idle). Each reuses the shapes and sizing of seed-table / peers.
 *
 * - `peers-long`   peers with a wider, longer QPS sweep (6 rates × 40 s) on two shapes
 *                  (Moreh scaled, SGLang gsp defaults scaled) and every cacheroute strategy.
 * - `kv-sweep`     90% sharing, round-robin vs cache-aware, KV factor 0.5 … 3 × the
 *                  per-engine share of the hot set (where the win appears and vanishes).
 * - `multi-turn`   chat sessions whose turns extend the conversation (chat API), our
 *                  strategies vs the peer routers.
 * - `mooncake`     replay of the shipped synthetic Mooncake-format trace (or any real
 *                  trace: copy the preset and change `file`), time-compressed.
 */
import { scaleShape, GSP_DEFAULT_SHAPE } from '../workloads/shared-prefix.js';
import type { ScenarioSpec } from '../workloads/scenario.js';
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
import type { MatrixBlock, PresetSpec } from './types.js';

const ALL_STRATEGIES = [
  cacheroute('round-robin'),
  cacheroute('random'),
  cacheroute('least-request'),
  cacheroute('prefix-hash'),
  cacheroute('cache-aware'),
];
const PEER_ROUTERS = [SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE];

// --- peers-long ---------------------------------------------------------------------------
const MOREH = { groups: 48, promptsPerGroup: 5, systemPromptTokens: 1600, questionTokens: 200, outputTokens: 32 };
const GSP = { ...scaleShape(GSP_DEFAULT_SHAPE, { tokens: 0.5, groups: 0.5, promptsPerGroup: 0.5 }), outputTokens: 32 };
const LONG_KV = kvBlocksFor({
  hotSetTokens: MOREH.groups * (MOREH.systemPromptTokens + MOREH.questionTokens),
  engines: 4,
  factor: 1.25,
  inflightTokens: 6 * 1800,
});

export const PEERS_LONG: PresetSpec = {
  name: 'peers-long',
  description:
    'Long version of peers: QPS 4–32 (40 s per rate), Moreh-scaled and SGLang-gsp-scaled shapes, all cacheroute strategies, both peer routers, Envoy alone.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 90,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 150_000 },
  blocks: (
    [
      ['moreh-scaled', MOREH],
      ['gsp-scaled', GSP],
    ] as const
  ).map(
    ([label, shape]): MatrixBlock => ({
      name: `sweep-${label}`,
      engines: engineSetup(
        `4x-kv${LONG_KV}-ts3`,
        4,
        { 'kv-cache-blocks': LONG_KV, 'time-scale': 3 },
        'peers sizing (Moreh shape scaled), time-scale 3.',
      ),
      scenarios: [
        { kind: 'shared-prefix', label, ...shape, durationS: 40, warmupPerGroup: 1, warmupQps: 16, arrival: { kind: 'poisson', qps: 8 } },
      ],
      qpsSweep: [4, 8, 12, 16, 24, 32],
      contenders: [...ALL_STRATEGIES, ...PEER_ROUTERS, ENVOY_RR, ENVOY_LR],
      contenderMaxQps: {
        [ENVOY_RR.label]: 16,
        [ENVOY_LR.label]: 16,
        'cacheroute-round-robin': 16,
        'cacheroute-random': 16,
        'cacheroute-least-request': 16,
      },
    }),
  ),
};

// --- kv-sweep -----------------------------------------------------------------------------
const PROMPT = 1536;
/** LRU working set: each group's latest full prompt. */
const HOT_SET = 32 * PROMPT;
const sharing90: ScenarioSpec = {
  kind: 'sharing-ratio',
  label: 'sharing-90',
  ratio: 0.9,
  promptTokens: PROMPT,
  groups: 32,
  requests: 240,
  outputTokens: 32,
  warmupPerGroup: 1,
  warmupQps: 12,
  arrival: { kind: 'poisson', qps: 6 },
};

export const KV_SWEEP: PresetSpec = {
  name: 'kv-sweep',
  description:
    'KV capacity per engine from 0.5× to 3× its share of the working set (32 groups × 1,536 tokens) (90% sharing, 4 engines): round-robin vs prefix-hash vs cache-aware.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 20,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [0.5, 0.75, 1, 1.25, 1.5, 2, 3].map((factor): MatrixBlock => {
    const kv = kvBlocksFor({ hotSetTokens: HOT_SET, engines: 4, factor, inflightTokens: 3 * PROMPT });
    return {
      name: `kv-${factor.toFixed(2)}x`,
      engines: engineSetup(
        `4x-kv${kv}`,
        4,
        { 'kv-cache-blocks': kv },
        `KV = ${factor} × (working set ${HOT_SET} tok ÷ 4) + 3 running prompts.`,
      ),
      scenarios: [sharing90],
      contenders: [cacheroute('round-robin'), cacheroute('prefix-hash'), cacheroute('cache-aware')],
    };
  }),
};

// --- multi-turn ---------------------------------------------------------------------------
const CHAT_KV = kvBlocksFor({ hotSetTokens: 48 * 2000, engines: 4, factor: 1.25, inflightTokens: 6 * 2000 });

export const MULTI_TURN: PresetSpec = {
  name: 'multi-turn',
  description:
    'Multi-turn chat (chat API): 48 sessions × 6 turns, each turn resends the conversation plus a new message; sessions start at 1 req/s, 2 s think time.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 12,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 150_000 },
  blocks: [
    {
      name: 'chat',
      engines: engineSetup(
        `4x-kv${CHAT_KV}`,
        4,
        { 'kv-cache-blocks': CHAT_KV },
        'KV = 1.25 × (48 conversations of ~2k tokens ÷ 4) + 6 running prompts.',
      ),
      scenarios: [
        {
          kind: 'multi-turn',
          label: 'chat-48x6',
          api: 'chat',
          sessions: 48,
          turns: 6,
          systemPrompts: 4,
          systemPromptTokens: 512,
          userTokens: 128,
          outputTokens: 32,
          thinkMs: 2000,
          arrival: { kind: 'poisson', qps: 1 },
        },
      ],
      contenders: [cacheroute('round-robin'), cacheroute('prefix-hash'), cacheroute('cache-aware'), ...PEER_ROUTERS],
    },
  ],
};

// --- mooncake -----------------------------------------------------------------------------
const MC_KV = kvBlocksFor({ hotSetTokens: 60_000, engines: 4, factor: 1.25, inflightTokens: 6 * 1000 });

export const MOONCAKE: PresetSpec = {
  name: 'mooncake',
  description:
    'Replay of bench/workloads/traces/synthetic-conversation.jsonl (Mooncake format, 192 requests), token lengths × 0.25 (128-token blocks), time × 0.2.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 6,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    {
      name: 'trace',
      engines: engineSetup(
        `4x-kv${MC_KV}`,
        4,
        { 'kv-cache-blocks': MC_KV },
        "KV ≈ 1.25 × a quarter of the trace's scaled unique blocks + 6 running prompts.",
      ),
      scenarios: [
        {
          kind: 'mooncake',
          label: 'synthetic-conversation',
          file: 'bench/workloads/traces/synthetic-conversation.jsonl',
          tokenScale: 0.25,
          timeScale: 0.2,
          maxOutputTokens: 32,
        },
      ],
      contenders: [cacheroute('round-robin'), cacheroute('prefix-hash'), cacheroute('cache-aware'), ...PEER_ROUTERS],
    },
  ],
};

// --- peers-hot ----------------------------------------------------------------------------
/** seed-table's hot-prefix block (same engines, same workload) with the peer routers added. */
const HOT_KV = kvBlocksFor({ hotSetTokens: 32 * PROMPT, engines: 4, factor: 1.25, inflightTokens: 4 * PROMPT });

export const PEERS_HOT: PresetSpec = {
  name: 'peers-hot',
  description:
    'Hot prefix (60% of traffic on one system prompt, 12 req/s, 4 engines; seed-table shape): cacheroute prefix-hash and cache-aware (defaults and with hotspot replication flipped) vs sglang-router and vllm-router (cache_aware).',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 4,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    {
      name: 'hot-prefix',
      engines: engineSetup(`4x-kv${HOT_KV}`, 4, { 'kv-cache-blocks': HOT_KV }, 'seed-table sizing and engine model (time-scale 2).'),
      scenarios: [
        {
          kind: 'hot-prefix',
          label: 'hot-60',
          groups: 8,
          hotShare: 0.6,
          requests: 240,
          systemPromptTokens: 1024,
          questionTokens: 512,
          outputTokens: 32,
          warmupPerGroup: 1,
          arrival: { kind: 'poisson', qps: 12 },
        },
      ],
      contenders: [cacheroute('prefix-hash'), cacheroute('cache-aware'), CACHE_AWARE_HOTSPOT_ON, ...PEER_ROUTERS],
    },
  ],
};

export const LONG_PRESETS: readonly PresetSpec[] = [PEERS_LONG, KV_SWEEP, MULTI_TURN, MOONCAKE, PEERS_HOT];
