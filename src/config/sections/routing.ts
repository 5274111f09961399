/** Top-level scalars: apiVersion, the strategy shorthand, fallbacks and the seed. */
import { ORDER_HEAD } from '../../framework/types.js';
import { strategySchema } from '../../plugins/presets/strategy.js';
import { int, oneOf } from '../../util/schema.js';
import type { ConfigSection } from '../config-section.js';
import { API_VERSION, DEFAULT_FALLBACKS, DEFAULT_SEED } from '../defaults.js';

export const routingSections = [
  { key: 'apiVersion', schema: oneOf([API_VERSION]) },
  /** A preset, by name or `{name, weights, plugins}`; expands to `plugins` + `schedulingProfiles` when those are not given. */
  { key: 'strategy', schema: strategySchema },
  /** Number of fallback endpoints returned after the chosen one. */
  { key: 'fallbacks', schema: int({ min: 0, max: ORDER_HEAD - 1 }).default(DEFAULT_FALLBACKS) },
  /** Seed for randomised choices (tie-breaks, random, power-of-two). */
  { key: 'seed', schema: int({ min: 0, max: 2 ** 32 - 1 }).default(DEFAULT_SEED) },
] as const satisfies readonly ConfigSection[];
