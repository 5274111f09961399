/**
 * `real-vllm-loss`: the diagnosis of cacheroute's loss on `real-vllm`'s shared-prefix
 * workload at 5 req/s (docs/decisions/0121-real-vllm-shared-prefix-loss.md). The same
 * engines, workload and rate as `real-vllm`, three contenders twice each in interleaved
 * order (A B C A B C, so drift of the shared machine shows up as a difference between the
 * two rounds instead of between contenders):
 *
 * - cacheroute cache-aware as `real-vllm` runs it (engine /metrics polled every 250 ms);
 * - the same with /metrics polled every 2 s: each vLLM scrape costs the engine's API server
 *   CPU on the two cores the engines run on;
 * - sglang-router 0.3.2 cache_aware (never scrapes /metrics).
 */
import { SGLANG_CACHE_AWARE } from './building-blocks.js';
import { REAL_VLLM, REAL_VLLM_ENGINES } from './real-vllm.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { PresetSpec } from './types.js';

const DECISIONS = { telemetry: { decisionHeader: true } };

const POLL_250: ContenderSpec = {
  kind: 'cacheroute',
  label: 'cacheroute-cache-aware',
  strategy: 'cache-aware',
  routerOverrides: { ...DECISIONS, engineMetrics: { pollIntervalMs: 250, timeoutMs: 1000, staleAfterMs: 2000 } },
};
const POLL_2000: ContenderSpec = {
  kind: 'cacheroute',
  label: 'cacheroute-cache-aware-poll2s',
  strategy: 'cache-aware',
  routerOverrides: { ...DECISIONS, engineMetrics: { pollIntervalMs: 2000, timeoutMs: 1000, staleAfterMs: 5000 } },
};

const round = (n: number, cs: readonly ContenderSpec[]): ContenderSpec[] => cs.map((c) => ({ ...c, label: `${c.label}#${n}` }));

const shared = REAL_VLLM.blocks[0]!;

export const REAL_VLLM_LOSS: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-loss',
  description:
    'Diagnosis of real-vllm shared-prefix @ 5 req/s: cacheroute cache-aware with /metrics polled every 250 ms and every 2 s, and sglang-router, twice each interleaved, on 2 real vLLM CPU engines.',
  estimatedMinutes: 9,
  blocks: [
    {
      ...shared,
      engines: REAL_VLLM_ENGINES,
      routerOverrides: {},
      qpsSweep: [5],
      contenders: [...round(1, [POLL_250, SGLANG_CACHE_AWARE, POLL_2000]), ...round(2, [POLL_250, SGLANG_CACHE_AWARE, POLL_2000])],
    },
  ],
};
