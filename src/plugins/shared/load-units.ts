/**
 * One place that says what "load" means for the load-aware plugins, so every comparison
 * uses the same unit for every candidate (comparing one engine's request count with
 * another's token count is meaningless).
 *
 *  - requests: the router's in-flight count, raised to the engine-reported
 *    running + waiting when that is fresh enough (effectiveQueue);
 *  - tokens: estimated pending tokens (uncached prefill + expected decode, see
 *    src/endpoints/load-model.ts) divided by `tokensPerRequest`, so that thresholds written
 *    in requests (imbalance 8, hotspot high water 6, session overload 8) keep their meaning
 *    in either unit: "8 requests" reads as "8 × tokensPerRequest pending tokens".
 */
import type { LoadSnapshot } from '../../endpoints/load.js';
import { effectiveQueue } from '../../endpoints/load.js';

export const LOAD_UNITS = ['requests', 'tokens'] as const;
export type LoadUnit = (typeof LOAD_UNITS)[number];

export interface LoadMeasure {
  readonly unit: LoadUnit;
  /** Pending tokens that count as one request in the tokens unit (> 0). */
  readonly tokensPerRequest: number;
  /** Engine-reported queue figures older than this are ignored (requests unit). */
  readonly maxMetricsAgeMs: number;
}

/** The load of one endpoint in the measure's unit (request-equivalents). */
export function loadIn(m: LoadMeasure, load: LoadSnapshot): number {
  return m.unit === 'tokens' ? load.pendingTokens / m.tokensPerRequest : effectiveQueue(load, m.maxMetricsAgeMs);
}

/** What one more request adds to an engine's load, in the same unit. */
export function requestWeight(m: LoadMeasure, promptTokens: number, expectedOutputTokens: number): number {
  return m.unit === 'tokens' ? Math.max(1, promptTokens + expectedOutputTokens) / m.tokensPerRequest : 1;
}
