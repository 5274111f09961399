/**
 * `real-vllm-ttft`: the predicted-ttft preset against the default (cache-aware) on two real
 * vLLM CPU engines, agentic sessions (the `real-vllm` agentic scenario), in interleaved
 * rounds (order rotated, seed + n − 1 in round n) so the noise between rounds is measured.
 *
 * predicted-ttft runs on the default access-log path (its model learns from the entry's
 * first-token time, the `cacheroute.first_body_us` tag of envoy/*.yaml) and with responses
 * through the router (`responsePath: ext-proc`: it also hears each first token as it comes);
 * cache-aware on the default path is the reference. After each run the harness reads the router's
 * `cacheroute_ttft_*` series: per engine, the first tokens observed and the online absolute
 * percentage error of the predictions (the accuracy bar: median ≤ 20 %).
 *
 *   npm run bench -- --preset real-vllm-ttft [--option rounds=2]
 */
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { PresetSpec } from './types.js';
import { REAL_ENGINE_POLLING, REAL_VLLM, REAL_VLLM_ENGINES } from './real-vllm.js';

const DEFAULT_ROUNDS = 3;

const ROTATION: readonly ContenderSpec[] = [
  { kind: 'cacheroute', label: 'cacheroute-cache-aware', strategy: 'cache-aware' },
  { kind: 'cacheroute', label: 'cacheroute-predicted-ttft', strategy: 'predicted-ttft' },
  { kind: 'cacheroute', label: 'cacheroute-predicted-ttft-via-router', strategy: 'predicted-ttft', responsePath: 'ext-proc' },
];

function round(n: number): ContenderSpec[] {
  const k = (n - 1) % ROTATION.length;
  return [...ROTATION.slice(k), ...ROTATION.slice(0, k)].map((c) => ({ ...c, label: `${c.label}#${n}` }));
}

const agentic = REAL_VLLM.blocks.find((b) => b.name === 'agentic')!;
const OPTIONS = [
  { name: 'rounds', default: String(DEFAULT_ROUNDS), integer: { min: 1, max: 6 }, description: 'interleaved rounds' },
] as const;

/** The preset for chosen options (all given; bench/presets/options.ts checks and completes them). */
export function realVllmTtft(chosen: Readonly<Record<string, string>>): PresetSpec {
  const rounds = Number(chosen['rounds'] ?? DEFAULT_ROUNDS);
  const contenders = Array.from({ length: rounds }, (_, i) => round(i + 1)).flat();
  return {
    name: 'real-vllm-ttft',
    description: `predicted-ttft (access log, and responses via the router) vs cache-aware (access log) on 2 real vLLM CPU engines (KV 96 blocks), agentic tool-calling sessions at 3 req/s, ${rounds} interleaved rounds (order rotated, seed + n − 1 in round n); per-engine TTFT prediction error from the router's metrics.`,
    seed: 1,
    model: TINY_MODEL_NAME,
    estimatedMinutes: Math.ceil(contenders.length * 1.2 + 2),
    budget: { requestTimeoutMs: 60_000, maxRunMs: 75_000 },
    blocks: [
      {
        name: 'agentic',
        engines: REAL_VLLM_ENGINES,
        routerOverrides: REAL_ENGINE_POLLING,
        scenarios: agentic.scenarios,
        qpsSweep: [3],
        seedPerRound: true,
        contenders,
      },
    ],
    options: OPTIONS,
    withOptions: realVllmTtft,
    chosenOptions: { rounds: String(rounds) },
  };
}

export const REAL_VLLM_TTFT: PresetSpec = realVllmTtft({});
