/** `telemetry:` section: logging and decision introspection. */
import type { z } from 'zod';
import { LOG_LEVELS } from '../logging/logger.js';
import { bool, int, oneOf, optionalSection } from '../util/schema.js';

export const DEFAULT_LOG_LEVEL = 'info' as const;
/** Off: response headers about routing leak topology to clients. */
export const DEFAULT_DECISION_HEADER = false;
/** Enough recent decisions to explain a burst, small enough to ignore in memory. */
export const DEFAULT_RECENT_DECISIONS = 256;

export const telemetrySchema = optionalSection({
  logLevel: oneOf(LOG_LEVELS as unknown as readonly ['debug', 'info', 'warn', 'error']).default(DEFAULT_LOG_LEVEL),
  decisionHeader: bool().default(DEFAULT_DECISION_HEADER).describe('Add a short x-cacheroute-decision response header.'),
  recentDecisions: int({ min: 0, max: 100_000 })
    .default(DEFAULT_RECENT_DECISIONS)
    .describe('How many recent decisions the explain endpoint keeps.'),
});

export type TelemetryConfig = z.output<typeof telemetrySchema>;
