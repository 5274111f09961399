/** `telemetry:` section: logging and decision introspection. */
import type { z } from 'zod';
import { LOG_LEVELS } from '../../logging/logger.js';
import { bool, int, oneOf, optionalSection } from '../../util/schema.js';
import { DEFAULT_DECISION_HEADER, DEFAULT_LOG_LEVEL, DEFAULT_RECENT_DECISIONS } from '../defaults.js';
import type { ConfigSection } from '../config-section.js';

const schema = optionalSection({
  logLevel: oneOf(LOG_LEVELS as unknown as readonly ['debug', 'info', 'warn', 'error']).default(DEFAULT_LOG_LEVEL),
  decisionHeader: bool().default(DEFAULT_DECISION_HEADER).describe('Add a short x-cacheroute-decision response header.'),
  recentDecisions: int({ min: 0, max: 100_000 })
    .default(DEFAULT_RECENT_DECISIONS)
    .describe('How many recent decisions the explain endpoint keeps.'),
});

export type TelemetryConfig = z.output<typeof schema>;

export const telemetrySection = { key: 'telemetry', schema } as const satisfies ConfigSection;
