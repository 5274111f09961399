/** The preset registry: one explicit list, names must be unique. */
import { LOAD_PRESETS } from './load-signals.js';
import { LONG_PRESETS } from './long-sweeps.js';
import { PEERS } from './peers.js';
import { COLD_SPREAD } from './cold-spread.js';
import { HOTSPOT_DEFAULT } from './hotspot-default.js';
import { PEERS_HOTSPOT } from './peers-hotspot.js';
import { PEERS_PATH } from './peers-path.js';
import { PEERS_TUNE } from './peers-tune.js';
import { REAL_VLLM } from './real-vllm.js';
import { REAL_VLLM_SIM } from './real-vllm-sim.js';
import { SEED_TABLE } from './seed-table.js';
import { TINY } from './tiny.js';
import type { PresetSpec } from './types.js';

/** Default presets first (each < 15 min), then opt-in long ones and the load-signal experiments. */
export const PRESETS: readonly PresetSpec[] = [TINY, SEED_TABLE, PEERS, ...LONG_PRESETS, ...LOAD_PRESETS, PEERS_TUNE, PEERS_HOTSPOT, PEERS_PATH, HOTSPOT_DEFAULT, COLD_SPREAD, REAL_VLLM, REAL_VLLM_SIM];

export function findPreset(name: string): PresetSpec | undefined {
  return PRESETS.find((p) => p.name === name);
}
