/** `health:` section: active checks, passive outlier detection, ejection backoff (src/health/). */
import type { z } from 'zod';
import { ALWAYS, bool, int, optionalSection, str } from '../../util/schema.js';
import { DEFAULT_HEALTH_CONFIG as D } from '../../health/health-config.js';
import type { ConfigSection } from '../config-section.js';

const schema = optionalSection({
  enabled: bool().default(D.enabled).describe('Off = every engine is always routable (no checks, no ejection).'),
  active: optionalSection({
    enabled: bool().default(D.active.enabled).describe("GET each engine's health path on an interval."),
    path: str({ pattern: /^\/[\x21-\x7e]*$/, what: 'an absolute path like /health' }).default(D.active.path),
    intervalMs: int({ min: 50, max: 600_000 }).default(D.active.intervalMs),
    timeoutMs: int({ min: 1, max: 60_000 }).default(D.active.timeoutMs),
    unhealthyThreshold: int({ min: 1, max: 100 })
      .default(D.active.unhealthyThreshold)
      .describe('Failed checks in a row that take an engine out (a refused connection: at once).'),
    healthyThreshold: int({ min: 1, max: 100 }).default(D.active.healthyThreshold).describe('Good checks in a row that bring it back.'),
  }).superRefine((a, ctx) => {
    if (typeof a.timeoutMs === 'number' && typeof a.intervalMs === 'number' && a.timeoutMs > a.intervalMs) {
      ctx.addIssue({ code: 'custom', path: ['timeoutMs'], message: `must not exceed intervalMs (${a.intervalMs})` });
    }
  }, ALWAYS),
  passive: optionalSection({
    enabled: bool().default(D.passive.enabled).describe('Eject on failures seen on the response path and failed scrapes.'),
    consecutiveFailures: int({ min: 1, max: 1000 }).default(D.passive.consecutiveFailures),
  }),
  ejection: optionalSection({
    baseMs: int({ min: 1, max: 3_600_000 }).default(D.ejection.baseMs).describe('First ejection; each further one doubles.'),
    maxMs: int({ min: 1, max: 3_600_000 }).default(D.ejection.maxMs),
  }).superRefine((e, ctx) => {
    if (typeof e.baseMs === 'number' && typeof e.maxMs === 'number' && e.maxMs < e.baseMs) {
      ctx.addIssue({ code: 'custom', path: ['maxMs'], message: `must be at least baseMs (${e.baseMs})` });
    }
  }, ALWAYS),
  clearIndexOnRestart: bool().default(D.clearIndexOnRestart).describe("Forget a restarted engine's prefix-index entries."),
});

export type HealthSection = z.output<typeof schema>;

export const healthSection = { key: 'health', schema } as const satisfies ConfigSection;
