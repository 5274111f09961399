/**
 * One place that says what "load" means for the load-aware plugins, so every comparison
 * uses the same unit for every candidate (comparing one engine's request count with
 * another's token count is meaningless).
 *
 *  - requests: the router's in-flight count, raised to the engine-reported
 *    running + waiting when that is fresh enough (effectiveQueue);
 *  - tokens: estimated pending tokens (uncached prefill + expected decode), see
 *    src/endpoints/load-model.ts.
 */
import type { LoadSnapshot } from '../../endpoints/load.js';
import { effectiveQueue } from '../../endpoints/load.js';

export const LOAD_UNITS = ['requests', 'tokens'] as const;
export type LoadUnit = (typeof LOAD_UNITS)[number];

export function loadIn(unit: LoadUnit, load: LoadSnapshot, maxMetricsAgeMs: number): number {
  return unit === 'tokens' ? load.pendingTokens : effectiveQueue(load, maxMetricsAgeMs);
}

/** What one more request adds to an engine's load, in the same unit. */
export function requestWeight(unit: LoadUnit, promptTokens: number, expectedOutputTokens: number): number {
  return unit === 'tokens' ? Math.max(1, promptTokens + expectedOutputTokens) : 1;
}
