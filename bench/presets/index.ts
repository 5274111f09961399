/** The preset registry: one explicit list, names must be unique. */
import { PEERS } from './peers.js';
import { SEED_TABLE } from './seed-table.js';
import { TINY } from './tiny.js';
import type { PresetSpec } from './types.js';

export const PRESETS: readonly PresetSpec[] = [TINY, SEED_TABLE, PEERS];

export function findPreset(name: string): PresetSpec | undefined {
  return PRESETS.find((p) => p.name === name);
}
