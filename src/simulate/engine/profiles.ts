/**
 * The engine model's named profiles, shared by the HTTP simulator (`--profile`) and the fleet
 * simulator: `vllm-cpu-tiny`, the real vLLM CPU engine this project runs, fitted by
 * bench/real-engine/fit-costs.ts; `gpu-like`, an 8B model on one H100 from published figures
 * (see the two constants in batching-engine.ts for the numbers and their sources).
 */
import { DEFAULT_ENGINE_MODEL, GPU_LIKE_ENGINE_MODEL, type EngineModelConfig } from './batching-engine.js';

export const ENGINE_MODEL_PROFILES: Readonly<Record<string, EngineModelConfig>> = {
  'vllm-cpu-tiny': DEFAULT_ENGINE_MODEL,
  'gpu-like': GPU_LIKE_ENGINE_MODEL,
};

/** The profile's model, or undefined for an unknown name. */
export function engineModelProfile(name: string): EngineModelConfig | undefined {
  return Object.hasOwn(ENGINE_MODEL_PROFILES, name) ? ENGINE_MODEL_PROFILES[name] : undefined;
}
