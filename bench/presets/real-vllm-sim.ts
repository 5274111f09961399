/**
 * `real-vllm-sim`: the `real-vllm` preset on two simulated engines fitted to the real one,
 * for the simulator-fidelity table (bench/report/fidelity-table.ts). Same workloads, rates,
 * contenders, seed and run ids; only the engines differ.
 *
 * The simulated engines tokenize with the tiny model's own tokenizer (`--tokenizer`), so
 * prompts, KV blocks (128 tokens), the cache size (96 blocks) and the prefill budget (2,048
 * tokens) are counted in the real engines' tokens; the step costs and the tokenize wait are the
 * simulator's defaults, named `vllm-cpu-tiny`, fitted to bench/real-engine/measure-costs.ts's
 * measurements of one real engine (bench/results/real-vllm/engine-costs*.json).
 */
import type { EngineFlags, EngineSetup, PresetSpec } from './types.js';
import { REAL_VLLM, REAL_VLLM_BLOCKS } from './real-vllm.js';

/** The simulator's `vllm-cpu-tiny` profile (its defaults; bench/sim-engine/engine-config.ts) with the real engines' cache size. */
export const VLLM_CPU_TINY_FLAGS: EngineFlags = {
  profile: 'vllm-cpu-tiny',
  'kv-cache-blocks': REAL_VLLM_BLOCKS,
  'max-model-len': 4096,
};

const SIM_ENGINES: EngineSetup = {
  label: REAL_VLLM.blocks[0]!.engines.label,
  count: 2,
  flags: VLLM_CPU_TINY_FLAGS,
  tinyModelTokenizer: true,
  rationale:
    "Simulated twin of the real engines: the tiny model's tokenizer, 128-token blocks, 96 of them, 2,048-token prefill budget, step costs fitted from engine-costs.json (profile vllm-cpu-tiny).",
};

export const REAL_VLLM_SIM: PresetSpec = {
  ...REAL_VLLM,
  name: 'real-vllm-sim',
  description: `${REAL_VLLM.description} Simulated twin (engines fitted to the real ones) for the fidelity table.`,
  estimatedMinutes: 18,
  blocks: REAL_VLLM.blocks.map((b) => ({ ...b, engines: SIM_ENGINES })),
};
