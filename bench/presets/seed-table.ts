/**
 * `seed-table`: the routing-strategy table of the background notes (round-robin vs
 * prefix-hash vs cache-aware at 0/50/90% prefix sharing on 4 engines), plus the hot-prefix
 * scenario (one system prompt carries 60% of the traffic).
 *
 * Sizing (the part that decides the outcome, so it is explicit):
 * - prompts of 1,536 tokens, 32 output tokens; 6 req/s Poisson, ~70% of what 4 engines
 *   can prefill with no cache hits at all, so queueing is present but not dominant;
 * - 32 prefix groups at every sweep point. What an engine's LRU must hold to keep a
 *   group warm is the group's whole latest prompt: its prefix, plus the unique question
 *   of its latest request, which is cached too and pushes older blocks out. So the
 *   working set is 32 × 1,536 tokens at every sharing ratio (docs/decisions/0012);
 * - KV per engine = 1.25 × (working set ÷ 4) + ~4 running prompts ≈ 21k tokens (1,344
 *   blocks of 16): enough for an engine's quarter of the groups, far from all of them.
 *   Cache-aware routing, which partitions groups, can keep its share resident;
 *   round-robin sends every group everywhere and evicts, landing near 1.25/N.
 * - one unmeasured warm-up request per group first, so short runs are not dominated by
 *   compulsory first-time misses (as inference-perf's warm-up stage).
 * Two extra blocks repeat the 90% point with KV factor 1.0 (eviction regime: round-robin
 * ≈ 1/N, but cache-aware starts losing its prefixes too) and 2.0 (plenty of room).
 * The hot-prefix scenario uses 1,024-token system prompts and 512-token questions at
 * 12 req/s: 60% of that (7.2 req/s) is more than one engine can prefill even with hits
 * (~6 req/s), while the whole fleet runs at about half its capacity.
 */
import { BENCH_MODEL, cacheroute, engineSetup, kvBlocksFor } from './building-blocks.js';
import type { ScenarioSpec } from '../workloads/scenario.js';
import type { MatrixBlock, PresetSpec } from './types.js';

const ENGINES = 4;
const PROMPT = 1536;
const GROUPS = 32;
/** LRU working set of the groups: each group's latest full prompt (see the header). */
const HOT_SET_TOKENS = GROUPS * PROMPT;
const QPS = 6;
const MEASURED = 240;

export const SEED_TABLE_KV_BLOCKS = kvBlocksFor({
  hotSetTokens: HOT_SET_TOKENS,
  engines: ENGINES,
  factor: 1.25,
  inflightTokens: 4 * PROMPT,
});

const sharing = (ratio: number): ScenarioSpec => ({
  kind: 'sharing-ratio',
  label: `sharing-${Math.round(ratio * 100)}`,
  ratio,
  promptTokens: PROMPT,
  groups: GROUPS,
  requests: MEASURED,
  outputTokens: 32,
  warmupPerGroup: ratio === 0 ? 0 : 1,
  warmupQps: 12,
  arrival: { kind: 'poisson', qps: QPS },
});

/** The 90% point again with the KV factor changed (1.25 is the main sweep's). */
function kvBlock(factor: number, inflightPrompts: number): MatrixBlock {
  const kv = kvBlocksFor({ hotSetTokens: HOT_SET_TOKENS, engines: ENGINES, factor, inflightTokens: inflightPrompts * PROMPT });
  return {
    name: `kv-${factor.toFixed(2)}x`,
    engines: engineSetup(
      `4x-kv${kv}`,
      ENGINES,
      { 'kv-cache-blocks': kv },
      `KV = ${factor} × (working set ÷ ${ENGINES}) + ${inflightPrompts} running prompts: ${factor < 1.25 ? 'each engine barely holds its share (eviction regime)' : 'room for about half the working set per engine'}.`,
    ),
    scenarios: [sharing(0.9)],
    contenders: [cacheroute('round-robin'), cacheroute('cache-aware')],
  };
}

export const SEED_TABLE: PresetSpec = {
  name: 'seed-table',
  description:
    'Round-robin vs prefix-hash vs cache-aware (cacheroute behind Envoy) on 4 simulated engines: prefix-sharing sweep 0/50/90% and a hot prefix carrying 60% of the traffic. Each run starts with cold, reset engines and the same seed.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 12,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    {
      name: 'sharing-sweep',
      engines: engineSetup(
        `4x-kv${SEED_TABLE_KV_BLOCKS}`,
        ENGINES,
        { 'kv-cache-blocks': SEED_TABLE_KV_BLOCKS },
        `KV = 1.25 × (working set ${GROUPS} groups × ${PROMPT} tok ÷ ${ENGINES}) + 4 running prompts, in 16-token blocks; engine model: simulator defaults (~8B on H100) at time-scale 2.`,
      ),
      scenarios: [0, 0.5, 0.9].map(sharing),
      contenders: [cacheroute('round-robin'), cacheroute('prefix-hash'), cacheroute('cache-aware')],
    },
    {
      name: 'hot-prefix',
      engines: engineSetup(
        `4x-kv${SEED_TABLE_KV_BLOCKS}`,
        ENGINES,
        { 'kv-cache-blocks': SEED_TABLE_KV_BLOCKS },
        `KV = 1.25 × (working set ${GROUPS} groups × ${PROMPT} tok ÷ ${ENGINES}) + 4 running prompts, in 16-token blocks; engine model: simulator defaults (~8B on H100) at time-scale 2.`,
      ),
      scenarios: [
        {
          kind: 'hot-prefix',
          label: 'hot-60',
          groups: 8,
          hotShare: 0.6,
          requests: MEASURED,
          systemPromptTokens: 1024,
          questionTokens: 512,
          outputTokens: 32,
          warmupPerGroup: 1,
          arrival: { kind: 'poisson', qps: 12 },
        },
      ],
      contenders: [cacheroute('round-robin'), cacheroute('prefix-hash'), cacheroute('cache-aware')],
    },
    kvBlock(1.0, 2),
    kvBlock(2.0, 4),
  ],
};
