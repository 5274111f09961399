/**
 * `kv-index-vllm` and `kv-index-sim`: the cache-aware strategy with its three affinity
 * indexes side by side on the same engines — approximate (routing history), precise (engine
 * KV events only) and hybrid (events plus speculative entries for routed requests) — on the
 * `real-vllm` preset's two workloads (2 real vLLM CPU engines, KV cut to 96 blocks) and on the
 * `peers` preset's shared-prefix shape (4 simulated engines publishing vLLM-format events,
 * tokenizing with the same tiny model's tokenizer as the router).
 *
 * The precise indexes discover each engine's publisher (`/kv_event_sources`) and tokenize
 * with the tiny model's own tokenizer files (test/kit/tiny-model.ts; made on first
 * use). Engines are reset (prefix cache emptied) before each run and the router starts after
 * that, so it joins each engine's event stream late on an empty cache: `resyncWindowMs: 0`
 * trusts the events at once (docs/kv-events.md, "Late subscriber").
 *
 * Sized to one heavy-lock hold each: one rate per workload (real vLLM), two rates (sim).
 */
import { tinyModelDir } from '../../test/kit/tiny-model.js';
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import { BLOCK_TOKENS, BENCH_MODEL, cacheroute, engineSetup } from './building-blocks.js';
import { REAL_VLLM, REAL_VLLM_ENGINES } from './real-vllm.js';
import { PEERS } from './peers.js';
import type { ContenderSpec } from '../contenders/types.js';
import type { PresetSpec } from './types.js';

/** precise-cache-aware (cache-aware with the precise-prefix-cache plugin) in `mode`, tokenizing `model` with the tiny model's tokenizer. */
function preciseContender(mode: 'precise' | 'hybrid', model: string, blockSize: number): ContenderSpec {
  return {
    kind: 'cacheroute',
    label: `cacheroute-cache-aware-${mode}`,
    strategy: 'precise-cache-aware',
    routerOverrides: {
      strategy: {
        name: 'precise-cache-aware',
        plugins: {
          'prefix-cache': {
            mode,
            models: [{ name: model, tokenizerDir: tinyModelDir(), blockSize }],
            kvEvents: { discover: true },
            resyncWindowMs: 0,
          },
        },
      },
    },
  };
}

function contenders(model: string, blockSize: number): ContenderSpec[] {
  return [
    cacheroute('cache-aware', 'cacheroute-cache-aware-approximate'),
    preciseContender('precise', model, blockSize),
    preciseContender('hybrid', model, blockSize),
  ];
}

const VLLM_BLOCK_TOKENS = 128;

export const KV_INDEX_VLLM: PresetSpec = {
  ...REAL_VLLM,
  name: 'kv-index-vllm',
  description:
    'cache-aware with the approximate, precise (KV events) and hybrid indexes side by side on the real-vllm workloads (2 real vLLM CPU engines, KV 96 blocks), one rate each.',
  estimatedMinutes: 9,
  blocks: REAL_VLLM.blocks.map((b) => ({
    ...b,
    engines: REAL_VLLM_ENGINES,
    qpsSweep: [3],
    contenders: contenders(TINY_MODEL_NAME, VLLM_BLOCK_TOKENS),
  })),
};

const peersSweep = PEERS.blocks[0]!;
const SIM_KV = Number(peersSweep.engines.flags['kv-cache-blocks']);

export const KV_INDEX_SIM: PresetSpec = {
  ...PEERS,
  name: 'kv-index-sim',
  description:
    "cache-aware with the approximate, precise (KV events) and hybrid indexes side by side on the peers preset's shared-prefix shape (4 simulated engines publishing KV events), 8 and 16 req/s.",
  estimatedMinutes: 8,
  // The engines and the router tokenize with the tiny model's tokenizer (made with vLLM's Python).
  needs: ['vllm'],
  blocks: [
    {
      ...peersSweep,
      engines: engineSetup(
        `4x-kv${SIM_KV}-ts3-events`,
        4,
        { 'kv-cache-blocks': SIM_KV, 'time-scale': 3, tokenizer: tinyModelDir(), 'kv-events-port-offset': 1000 },
        `${peersSweep.engines.rationale} Engines tokenize with the tiny model's tokenizer and publish KV events (HTTP port + 1000).`,
      ),
      qpsSweep: [8, 16],
      contenders: contenders(BENCH_MODEL, BLOCK_TOKENS),
    },
  ],
};
