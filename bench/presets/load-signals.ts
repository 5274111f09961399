/**
 * Experiments of the load-signal work (docs/load-signals.md), run through the harness:
 *
 * - `load-hotspot`  one system prompt carries 60% of the traffic on 8 engines: prefix-hash
 *   piles it onto one engine; cache-aware (imbalance escape), cache-aware with hotspot
 *   replication and bounded-load hashing spread it. Target: cache-aware p99 TTFT ≤ 0.5×
 *   prefix-hash's with the token hit rate within 5 points.
 * - `load-staleness` the same hot-prefix shape on 4 engines with engine metrics polled
 *   every 50 ms, 500 ms, 5 s, and polled every 100 ms but frozen (sim /admin/freeze-metrics)
 *   5 s into the run while the engines are busy. Target: cache-aware's p99 TTFT never
 *   worse than round-robin's in any block.
 * - `load-auto`     0% and 90% prefix sharing on 4 engines: `auto` against least-request,
 *   round-robin and cache-aware. Target: auto within 10% of the better fixed strategy.
 *
 * Sizing notes are next to each block. Engines run the default benchmark engine model
 * (building-blocks.ts) at time-scale 4 for the 8-engine block, so the 2-core machine
 * carries the fleet (half the SSE event rate per unit of engine load).
 */
import { BENCH_MODEL, CACHE_AWARE_HOTSPOT_FLIPPED, cacheroute, engineSetup, kvBlocksFor, SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE } from './building-blocks.js';
import { PEERS } from './peers.js';
import { SEED_TABLE } from './seed-table.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { ScenarioSpec } from '../workloads/scenario.js';
import type { MatrixBlock, PresetSpec } from './types.js';

const SYSTEM = 1024;
const QUESTION = 512;
const PROMPT = SYSTEM + QUESTION;

const hotPrefix = (label: string, qps: number, durationS: number): ScenarioSpec => ({
  kind: 'hot-prefix',
  label,
  groups: 8,
  hotShare: 0.6,
  requests: Math.round(qps * durationS),
  systemPromptTokens: SYSTEM,
  questionTokens: QUESTION,
  outputTokens: 32,
  warmupPerGroup: 1,
  arrival: { kind: 'poisson', qps },
});


// --- load-hotspot: 8 engines ---------------------------------------------------------
/**
 * Time-scale 4: one engine prefills ~3 hot requests/s with the system prompt cached
 * (512 new tokens each); 12 req/s × 60% = 7.2 req/s hot traffic needs ≥ 3 engines, while
 * the fleet of 8 runs at about half its capacity. KV holds the 8 system prompts twice
 * over plus 8 running prompts per engine, so the hit rate is decided by routing, not by
 * eviction.
 */
const HOT8_KV = kvBlocksFor({ hotSetTokens: 8 * SYSTEM, engines: 8, factor: 8, inflightTokens: 8 * PROMPT });
/** Eviction regime: room for 8 running prompts and only 2 system prompts per engine. */
const HOT8_EVICT_KV = kvBlocksFor({ hotSetTokens: 8 * SYSTEM, engines: 8, factor: 2, inflightTokens: 8 * PROMPT });
const HOT8_CONTENDERS = [cacheroute('prefix-hash'), cacheroute('cache-aware'), CACHE_AWARE_HOTSPOT_FLIPPED, cacheroute('bounded-load-hash'), cacheroute('round-robin')];

export const LOAD_HOTSPOT: PresetSpec = {
  name: 'load-hotspot',
  description: 'Hot prefix (60% of traffic) on 8 engines: prefix-hash vs cache-aware (imbalance escape) vs cache-aware+hotspot replication vs bounded-load-hash, round-robin for reference.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 14,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    {
      name: 'hot8',
      engines: engineSetup(`8x-kv${HOT8_KV}-ts4`, 8, { 'kv-cache-blocks': HOT8_KV, 'time-scale': 4 }, 'Benchmark engine model at time-scale 4; KV for every system prompt plus 8 running prompts per engine.'),
      scenarios: [hotPrefix('hot-60', 12, 40)],
      contenders: HOT8_CONTENDERS,
    },
    {
      name: 'hot8-evict',
      engines: engineSetup(`8x-kv${HOT8_EVICT_KV}-ts4`, 8, { 'kv-cache-blocks': HOT8_EVICT_KV, 'time-scale': 4 }, 'As hot8, but KV holds 8 running prompts and only 2 of the 8 system prompts per engine (eviction regime).'),
      scenarios: [hotPrefix('hot-60', 12, 40)],
      contenders: HOT8_CONTENDERS,
    },
  ],
};

// --- sharing-ratio shape shared by load-staleness and load-auto ------------------------
/** Seed-table sharing sweep shape (4 engines, 1,536-token prompts, 6 req/s, eviction-regime KV). */
const AUTO_HOT_SET = 32 * Math.round(PROMPT * 0.9);
const AUTO_KV = kvBlocksFor({ hotSetTokens: AUTO_HOT_SET, engines: 4, factor: 1.25, inflightTokens: 4 * PROMPT });

const sharing = (ratio: number, requests = 240): ScenarioSpec => ({
  kind: 'sharing-ratio',
  label: `sharing-${Math.round(ratio * 100)}`,
  ratio,
  promptTokens: PROMPT,
  groups: ratio === 0 ? 32 : Math.round(AUTO_HOT_SET / Math.round(PROMPT * ratio)),
  requests,
  outputTokens: 32,
  warmupPerGroup: ratio === 0 ? 0 : 1,
  warmupQps: 12,
  arrival: { kind: 'poisson', qps: 6 },
});

// --- load-staleness: 4 engines, metric freshness sweep --------------------------------
/**
 * Seed-table sharing-90 shape (4 engines, 32 groups of 1,382 shared tokens, 1,536-token
 * prompts, 6 req/s, KV = 1.25 × the engine's share of the hot set): the regime where
 * cache-aware clearly beats round-robin with fresh metrics, so the question is only
 * whether stale or frozen load numbers can undo that.
 */
const STALE_ENGINES = engineSetup(`4x-kv${AUTO_KV}`, 4, { 'kv-cache-blocks': AUTO_KV }, 'Seed-table sizing: KV = 1.25 × (hot set ÷ 4) + 4 running prompts; benchmark engine model at time-scale 2.');

function staleBlock(name: string, engineMetrics: Readonly<Record<string, unknown>>, extra: Partial<MatrixBlock> = {}): MatrixBlock {
  return {
    name,
    engines: STALE_ENGINES,
    scenarios: [sharing(0.9, 180)],
    contenders: [cacheroute('round-robin'), cacheroute('cache-aware')],
    routerOverrides: { engineMetrics: { enabled: true, ...engineMetrics } },
    ...extra,
  };
}

export const LOAD_STALENESS: PresetSpec = {
  name: 'load-staleness',
  description: 'Engine-metric freshness sweep on 4 engines (90% prefix sharing): scrape every 50 ms, 500 ms, 5 s, and metrics frozen 5 s into the run; cache-aware vs round-robin in each.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 8,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    staleBlock('scrape-50ms', { pollIntervalMs: 50, staleAfterMs: 1000, timeoutMs: 500 }),
    staleBlock('scrape-500ms', { pollIntervalMs: 500, staleAfterMs: 1000, timeoutMs: 500 }),
    // A 5 s interval needs staleAfterMs above it; signals then fade over 10 s.
    staleBlock('scrape-5s', { pollIntervalMs: 5000, staleAfterMs: 10_000, timeoutMs: 500 }),
    staleBlock('frozen', { pollIntervalMs: 100, staleAfterMs: 1000, timeoutMs: 500 }, {
      engineActions: [{ atMs: 5000, path: '/admin/freeze-metrics', undo: '/admin/unfreeze-metrics' }],
    }),
  ],
};

// --- load-auto: measure, then choose ----------------------------------------------------
export const LOAD_AUTO: PresetSpec = {
  name: 'load-auto',
  description: '`auto` vs least-request, round-robin and cache-aware at 0% and 90% prefix sharing on 4 engines (seed-table shape), and auto\'s two load modes at 0%.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 10,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    {
      name: 'auto',
      engines: engineSetup(`4x-kv${AUTO_KV}`, 4, { 'kv-cache-blocks': AUTO_KV }, 'Seed-table sizing: KV = 1.25 × (hot set ÷ 4) + 4 running prompts.'),
      scenarios: [sharing(0), sharing(0.9)],
      contenders: [
        cacheroute('auto'),
        // The previous default start (load mode until the statistics are confident), side by side.
        { kind: 'cacheroute', label: 'auto-start-load', strategy: 'auto', routerOverrides: { load: { auto: { initial: 'load' } } } },
        cacheroute('least-request'),
        cacheroute('round-robin'),
        cacheroute('cache-aware'),
      ],
    },
    {
      // Why auto's load mode is round-robin: the alternative on the same 0% workload.
      name: 'auto-load-mode',
      engines: engineSetup(`4x-kv${AUTO_KV}`, 4, { 'kv-cache-blocks': AUTO_KV }, 'Seed-table sizing: KV = 1.25 × (hot set ÷ 4) + 4 running prompts.'),
      scenarios: [sharing(0)],
      contenders: [
        cacheroute('auto', 'auto-round-robin'),
        { kind: 'cacheroute', label: 'auto-least-loaded', strategy: 'auto', routerOverrides: { load: { auto: { loadMode: 'least-loaded' } } } },
      ],
    },
  ],
};

// --- load-cold: what cache-aware does with requests nothing is cached for ---------------
/**
 * cache-aware lost to round-robin at 0% sharing (seed-table: TTFT p50 786 vs 496 ms, p99
 * 2.93 vs 0.82 s). With no prefix score anywhere, the choice falls to the queue and KV-usage
 * scorers; this block takes them apart side by side on the same engines, and checks the
 * 90%-sharing case for regressions.
 */
const caVariant = (label: string, routerOverrides: Readonly<Record<string, unknown>>): ContenderSpec => ({
  kind: 'cacheroute',
  label,
  strategy: 'cache-aware',
  routerOverrides,
});

const PREFILL = caVariant('ca-prefill', { cacheAware: { queueSignal: 'prefill' } });
const COLD_QUEUE = caVariant('ca-cold-prefill-queue', { cacheAware: { coldRouting: 'prefill-queue' } });
const PREFILL_KV0 = caVariant('ca-prefill-kv0', { cacheAware: { queueSignal: 'prefill', weights: { kvUsage: 0 } } });

const LOAD_COLD: PresetSpec = {
  name: 'load-cold',
  description: 'cache-aware load scoring: default vs without KV usage vs the prefill-queue signal, with round-robin and least-request, at 0% and 90% sharing on 4 engines; then default vs prefill+no-KV on the hot prefix and on the peers workload at 16 req/s.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 22,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 120_000 },
  blocks: [
    {
      name: 'cold',
      engines: engineSetup(`4x-kv${AUTO_KV}`, 4, { 'kv-cache-blocks': AUTO_KV }, 'Seed-table sizing: KV = 1.25 × (hot set ÷ 4) + 4 running prompts.'),
      scenarios: [sharing(0), sharing(0.9)],
      contenders: [
        cacheroute('round-robin'),
        cacheroute('least-request'),
        cacheroute('cache-aware'),
        caVariant('ca-kv0', { cacheAware: { weights: { kvUsage: 0 } } }),
        PREFILL,
        PREFILL_KV0,
        COLD_QUEUE,
      ],
    },
    // The same two load-scoring choices where load decides the tail: seed-table's hot prefix,
    // and the peers workload at 16 req/s (where cache-aware's p99 trailed the peer routers).
    {
      ...SEED_TABLE.blocks.find((b) => b.name === 'hot-prefix')!,
      name: 'cold-hot-prefix',
      contenders: [cacheroute('prefix-hash'), cacheroute('cache-aware'), PREFILL, PREFILL_KV0, COLD_QUEUE],
    },
    {
      ...PEERS.blocks[0]!,
      name: 'cold-peers-16rps',
      qpsSweep: [16],
      contenders: [cacheroute('cache-aware'), PREFILL, PREFILL_KV0, COLD_QUEUE, SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE],
    },
  ],
};

export const LOAD_PRESETS: readonly PresetSpec[] = [LOAD_HOTSPOT, LOAD_STALENESS, LOAD_AUTO, LOAD_COLD];
