/**
 * Reusable pieces for presets: the engine model, KV sizing relative to the hot prefix
 * set, and the standard contender lists. A new preset should mostly combine these.
 */
import type { StrategyName } from '../../src/config/types.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { EngineFlags, EngineSetup } from './types.js';

export const BENCH_MODEL = 'sim-model';

/** Block size of the presets' `gpu-like` engines (vLLM's CUDA default). */
export const BLOCK_TOKENS = 16;

/**
 * Engine model used by the default presets: the simulator's `gpu-like` profile, ~8B on an
 * H100 (the defaults until they were fitted to the real CPU engine; 8 ms step overhead, 0.15 ms per prefill token, 0.4 ms per decoding sequence, 2,048
 * prefill tokens per step) slowed down 2× with --time-scale, so that a cold 2,000-token
 * prefill takes ~0.6 s, a prefix hit tens of ms, and a decode step ≥ 16 ms. Steps of
 * tens of ms keep event-loop jitter on a shared 2-core machine (a few ms) small relative
 * to what is measured, and halve the SSE event rate compared with real time.
 */
export const ENGINE_MODEL_FLAGS: EngineFlags = {
  profile: 'gpu-like',
  'block-size': BLOCK_TOKENS,
  'max-num-seqs': 64,
  'max-batched-tokens': 2048,
  'step-overhead-ms': 8,
  'prefill-ms-per-token': 0.15,
  'decode-ms-per-seq': 0.4,
  'time-scale': 2,
};

/**
 * KV blocks per engine for a hot prefix set: `factor` × (hot set ÷ engines) plus room
 * for the requests running at once (`inflightTokens` per engine). factor ≈ 1 means an
 * engine holds about its 1/N share of the prefixes: cache-aware routing (which
 * partitions prefixes) keeps them resident, round-robin (which sends every prefix
 * everywhere) thrashes and hits ≈ 1/N — the eviction regime the published comparisons
 * run in (benchmarking.md §1.2, llm-d's capacity sizing).
 */
export function kvBlocksFor(opts: { hotSetTokens: number; engines: number; factor: number; inflightTokens: number }): number {
  const share = opts.hotSetTokens / opts.engines;
  return Math.ceil((opts.factor * share + opts.inflightTokens) / BLOCK_TOKENS);
}

export function engineSetup(label: string, count: number, extra: EngineFlags, rationale: string): EngineSetup {
  return { label, count, flags: { ...ENGINE_MODEL_FLAGS, ...extra }, rationale };
}

export function cacheroute(strategy: StrategyName, label = `cacheroute-${strategy}`): ContenderSpec {
  return { kind: 'cacheroute', label, strategy };
}

/** cache-aware with hot-prefix replication (an optional plugin of the preset, off by default) switched on. */
export const CACHE_AWARE_HOTSPOT_ON: ContenderSpec = {
  kind: 'cacheroute',
  label: 'cacheroute-cache-aware+hotspot',
  strategy: 'cache-aware',
  routerOverrides: { strategy: { name: 'cache-aware', plugins: { 'hotspot-replication-filter': {} } } },
};

export const SGLANG_CACHE_AWARE: ContenderSpec = { kind: 'sglang-router', label: 'sglang-cache_aware', policy: 'cache_aware' };
export const VLLM_CACHE_AWARE: ContenderSpec = { kind: 'vllm-router', label: 'vllm-cache_aware', policy: 'cache_aware' };
export const ENVOY_RR: ContenderSpec = { kind: 'envoy-only', label: 'envoy-round-robin', lb: 'round-robin' };
export const ENVOY_LR: ContenderSpec = { kind: 'envoy-only', label: 'envoy-least-request', lb: 'least-request' };
