/**
 * `real-vllm-sim`: the `real-vllm` preset on two simulated engines fitted to the real one,
 * for the simulator-fidelity table (bench/report/fidelity-table.ts). Same workloads, rates,
 * contenders, seed and run ids; only the engines differ.
 *
 * The simulator counts one token per synthetic word, the real tokenizer ~1.63, so the fit is
 * expressed per word (the simulator's `vllm-cpu-tiny` profile): a 128-token KV block is 78
 * words, 96 blocks hold the same text as the real 96, the prefill budget of 2,048 tokens is
 * 1,256 words, and the prefill cost per word is 1.63 × the real cost per token. Costs come
 * from bench/real-engine/measure-costs.ts on one real engine
 * (bench/results/real-vllm/engine-costs.json).
 */
import type { EngineFlags, EngineSetup, PresetSpec } from './types.js';
import { REAL_VLLM, REAL_VLLM_BLOCKS } from './real-vllm.js';

/** Real tokens per synthetic word (tiny model tokenizer, measured). */
export const TOKENS_PER_WORD = 1.63;

/** The simulator's `vllm-cpu-tiny` profile (bench/sim-engine/engine-config.ts) with the real engines' cache size. */
export const VLLM_CPU_TINY_FLAGS: EngineFlags = {
  profile: 'vllm-cpu-tiny',
  'kv-cache-blocks': REAL_VLLM_BLOCKS,
  'max-model-len': Math.round(4096 / TOKENS_PER_WORD),
};

const SIM_ENGINES: EngineSetup = {
  label: REAL_VLLM.blocks[0]!.engines.label,
  count: 2,
  flags: VLLM_CPU_TINY_FLAGS,
  rationale: 'Simulated twin of the real engines: block, cache size and prefill budget in words of the same text, costs fitted from engine-costs.json.',
};

export const REAL_VLLM_SIM: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-sim',
  description: `${REAL_VLLM.description} Simulated twin (engines fitted to the real ones) for the fidelity table.`,
  estimatedMinutes: 18,
  blocks: REAL_VLLM.blocks.map((b) => ({ ...b, engines: SIM_ENGINES })),
};
