/** The preset registry: one explicit list, names must be unique. */
import { AGENTIC } from './agentic.js';
import { KV_INDEX_SIM, KV_INDEX_VLLM } from './kv-index.js';
import { LONG_PRESETS } from './long-sweeps.js';
import { PEERS } from './peers.js';
import { REAL_VLLM } from './real-vllm.js';
import { REAL_VLLM_SIM } from './real-vllm-sim.js';
import { REAL_VLLM_TTFT } from './real-vllm-ttft.js';
import { REPLICAS, REPLICAS_SMOKE } from './replicas.js';
import { SEED_TABLE } from './seed-table.js';
import { TINY } from './tiny.js';
import { FLEET_AGENTIC, FLEET_HOT_PREFIX, FLEET_SEED_TABLE, FLEET_SPEED, FLEET_STALENESS } from '../fleet/studies.js';
import { FLEET_REPLICAS } from '../fleet/replicas-study.js';
import type { FleetStudy } from '../fleet/study.js';
import type { PresetSpec } from './types.js';

/** Default presets first (each < 15 min), then the opt-in long ones and the real-vLLM pair. */
export const PRESETS: readonly PresetSpec[] = [
  TINY,
  SEED_TABLE,
  PEERS,
  AGENTIC,
  REPLICAS,
  REPLICAS_SMOKE,
  ...LONG_PRESETS,
  REAL_VLLM,
  REAL_VLLM_SIM,
  REAL_VLLM_TTFT,
  KV_INDEX_VLLM,
  KV_INDEX_SIM,
];

export function findPreset(name: string): PresetSpec | undefined {
  return PRESETS.find((p) => p.name === name);
}

/** Fleet-simulator studies (`npm run bench -- fleet <name>`, results in bench/results/fleet-<name>/). */
export const FLEET_STUDIES: readonly FleetStudy[] = [
  FLEET_SEED_TABLE,
  FLEET_STALENESS,
  FLEET_HOT_PREFIX,
  FLEET_AGENTIC,
  FLEET_SPEED,
  FLEET_REPLICAS,
];
