/**
 * `tiny`: a smoke run of the whole pipeline in well under a minute (used by the test):
 * 2 engines, one shared-prefix scenario at two rates, our router (cache-aware and
 * round-robin) through Envoy and Envoy alone.
 */
import { BENCH_MODEL, cacheroute, ENVOY_RR, engineSetup } from './building-blocks.js';
import type { PresetSpec } from './types.js';

export const TINY: PresetSpec = {
  name: 'tiny',
  description:
    'Smoke test of the harness: 2 simulated engines, 90% shared prefixes (4 groups), 2 rates × 3 contenders, 16 measured requests per run.',
  seed: 1,
  model: BENCH_MODEL,
  estimatedMinutes: 1,
  budget: { requestTimeoutMs: 15_000, maxRunMs: 30_000 },
  blocks: [
    {
      name: 'tiny',
      engines: engineSetup(
        '2x-small',
        2,
        { 'time-scale': 1, 'kv-cache-blocks': 512 },
        'Smallest fleet that shows routing; fast steps to finish in seconds.',
      ),
      scenarios: [
        {
          kind: 'sharing-ratio',
          label: 'sharing-90',
          ratio: 0.9,
          promptTokens: 320,
          groups: 4,
          requests: 16,
          outputTokens: 8,
          warmupPerGroup: 1,
          arrival: { kind: 'poisson', qps: 8 },
        },
      ],
      qpsSweep: [4, 8],
      contenders: [cacheroute('cache-aware'), cacheroute('round-robin'), ENVOY_RR],
    },
  ],
};
