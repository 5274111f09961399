/**
 * `agentic`: tool-using agent sessions on 4 simulated engines under KV pressure, the
 * workload of `replicas` (8 Zipf-popular tenants with 1,000-token system prompts, each session
 * a task then 3 tool calls whose growing history is resent, 15% one-off 1,200-token prompts),
 * with one router each: cacheroute's strategies next to sglang-router and vllm-router. Sessions
 * reward keeping a conversation on the engine that holds its history; the one-offs and the
 * Zipf skew punish piling everything on one engine, so good and bad routing differ in both
 * hit rate and tail.
 */
import { cacheroute, SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE } from './building-blocks.js';
import { AGENTIC_ENGINES, agenticSessions } from './replicas.js';
import { REPLICAS } from './replicas.js';
import type { PresetSpec } from './types.js';

export const AGENTIC: PresetSpec = {
  name: 'agentic',
  description:
    'Agentic tool-calling sessions (8 Zipf tenants, 3 tool calls per session, 15% one-offs) on 4 simulated engines under KV pressure, 4 and 8 req/s: cacheroute round-robin, prefix-hash and cache-aware vs sglang-router and vllm-router (cache_aware).',
  seed: 1,
  model: REPLICAS.model,
  estimatedMinutes: 9,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 90_000 },
  blocks: [
    {
      name: 'sessions',
      engines: AGENTIC_ENGINES,
      scenarios: [agenticSessions('agentic', { durationS: 30 })],
      qpsSweep: [4, 8],
      contenders: [cacheroute('round-robin'), cacheroute('prefix-hash'), cacheroute('cache-aware'), SGLANG_CACHE_AWARE, VLLM_CACHE_AWARE],
    },
  ],
};
