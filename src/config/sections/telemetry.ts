/** `telemetry:` section: logging and decision introspection. */
import type { TelemetryConfig } from '../types.js';
import { bool, int, oneOf, type ObjectReader } from '../field-reader.js';
import { DEFAULT_DECISION_HEADER, DEFAULT_LOG_LEVEL, DEFAULT_RECENT_DECISIONS } from '../defaults.js';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

export function parseTelemetry(r: ObjectReader): TelemetryConfig {
  const logLevel = r.get('logLevel', oneOf(LOG_LEVELS), DEFAULT_LOG_LEVEL);
  const decisionHeader = r.get('decisionHeader', bool(), DEFAULT_DECISION_HEADER);
  const recentDecisions = r.get('recentDecisions', int({ min: 0, max: 100_000 }), DEFAULT_RECENT_DECISIONS);
  r.done();
  return { logLevel, decisionHeader, recentDecisions };
}
