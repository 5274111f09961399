/** The preset registry: one explicit list, names must be unique. */
import { TINY } from './tiny.js';
import type { PresetSpec } from './types.js';

export const PRESETS: readonly PresetSpec[] = [TINY];

export function findPreset(name: string): PresetSpec | undefined {
  return PRESETS.find((p) => p.name === name);
}
