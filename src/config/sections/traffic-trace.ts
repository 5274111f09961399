/** `trafficTrace:` section: record a privacy-safe trace of the traffic (src/traffic-trace/). */
import type { z } from 'zod';
import { int, num, optionalSection, str } from '../../util/schema.js';
import { DEFAULT_TRAFFIC_TRACE as D } from '../../traffic-trace/trace-defaults.js';
import type { ConfigSection } from '../config-section.js';

const schema = optionalSection({
  path: str({ nonEmpty: true })
    .optional()
    .describe(
      'Record a trace here (JSONL in the Mooncake layout: arrival, model, token counts, per-trace prefix block ids; never prompt text). Absent = off.',
    ),
  sampleRate: num({ min: 0, max: 1 }).default(D.sampleRate).describe('Fraction of requests recorded.'),
  blockTokens: int({ min: 1, max: 65_536 }).default(D.blockTokens).describe('Tokens per prefix block id.'),
  maxFileBytes: int({ min: 4096, max: 2 ** 40 })
    .default(D.maxFileBytes)
    .describe('A file rotates once it reaches this size.'),
  maxFiles: int({ min: 1, max: 1000 }).default(D.maxFiles).describe('Files kept (path, path.1, ...), the current one included.'),
  flushIntervalMs: int({ min: 10, max: 60_000 }).default(D.flushIntervalMs).describe('How often queued lines are appended.'),
  maxQueuedBytes: int({ min: 4096, max: 2 ** 30 })
    .default(D.maxQueuedBytes)
    .describe('Lines waiting for the disk beyond this are dropped.'),
  maxBlockKeys: int({ min: 1, max: 100_000_000 }).default(D.maxBlockKeys).describe('Distinct prefix blocks remembered per file.'),
});

export type TrafficTraceConfig = z.output<typeof schema>;

export const trafficTraceSection = { key: 'trafficTrace', schema } as const satisfies ConfigSection;
