/** `engineMetrics:` section: polling engines' Prometheus endpoints. */
import type { EngineMetricsConfig } from '../types.js';
import { bool, int, type ObjectReader } from '../field-reader.js';
import {
  DEFAULT_ENGINE_METRICS_ENABLED,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_POLL_TIMEOUT_MS,
  DEFAULT_STALE_AFTER_MS,
} from '../defaults.js';

/** A hanging engine holds one slot until its timeout; 16 leaves room for the rest of a large pool. */
export const DEFAULT_POLL_MAX_CONCURRENCY = 16;
/** Three of our requests finishing without any number moving is not a coincidence. */
export const DEFAULT_FROZEN_AFTER_COMPLETIONS = 3;
/** About a short answer's decode time: long enough to carry a burst, short enough to forget a stale page. */
export const DEFAULT_UNOBSERVED_HALF_LIFE_MS = 1000;

export function parseEngineMetrics(r: ObjectReader): EngineMetricsConfig {
  const enabled = r.get('enabled', bool(), DEFAULT_ENGINE_METRICS_ENABLED);
  const pollIntervalMs = r.get('pollIntervalMs', int({ min: 10, max: 60_000 }), DEFAULT_POLL_INTERVAL_MS);
  const timeoutMs = r.get('timeoutMs', int({ min: 1, max: 60_000 }), DEFAULT_POLL_TIMEOUT_MS);
  const staleAfterMs = r.get('staleAfterMs', int({ min: 1, max: 3_600_000 }), DEFAULT_STALE_AFTER_MS);
  if (staleAfterMs <= pollIntervalMs) {
    r.report('staleAfterMs', `must be greater than pollIntervalMs (${pollIntervalMs}), or every reading is stale`);
  }
  const maxConcurrency = r.get('maxConcurrency', int({ min: 1, max: 10_000 }), DEFAULT_POLL_MAX_CONCURRENCY);
  const frozenAfterCompletions = r.get('frozenAfterCompletions', int({ min: 1, max: 1_000_000 }), DEFAULT_FROZEN_AFTER_COMPLETIONS);
  const unobservedHalfLifeMs = r.get('unobservedHalfLifeMs', int({ min: 1, max: 3_600_000 }), DEFAULT_UNOBSERVED_HALF_LIFE_MS);
  if (timeoutMs > staleAfterMs) {
    r.report('timeoutMs', `must not exceed staleAfterMs (${staleAfterMs})`);
  }
  r.done();
  return { enabled, pollIntervalMs, timeoutMs, staleAfterMs, maxConcurrency, frozenAfterCompletions, unobservedHalfLifeMs };
}
