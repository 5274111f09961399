/** The `health:` configuration section: its schema (defaults, validation, field docs) and defaults. */
import type { z } from 'zod';
import { ALWAYS, bool, int, optionalSection, str } from '../util/schema.js';

/** Twice a second: a dead engine is out within one interval (a refused connect ejects at once). */
export const DEFAULT_HEALTH_INTERVAL_MS = 500;
/** Below the interval so checks never pile up. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 400;
/** Two slow/failed answers in a row, as Envoy's usual `unhealthy_threshold: 2`. */
export const DEFAULT_UNHEALTHY_THRESHOLD = 2;
/** One good answer re-admits: the passive detector catches an engine that is only half back. */
export const DEFAULT_HEALTHY_THRESHOLD = 1;
/** Three in a row, fewer than Envoy's 5 because the router sees every response of the fleet. */
export const DEFAULT_CONSECUTIVE_FAILURES = 3;
/** Envoy outlier detection's base_ejection_time is 30 s; an LLM engine rebooting takes longer than a 1 s ejection but the backoff doubles. */
export const DEFAULT_BASE_EJECTION_MS = 1_000;
export const DEFAULT_MAX_EJECTION_MS = 30_000;

export const DEFAULT_HEALTH_CONFIG = {
  enabled: true,
  active: {
    enabled: true,
    path: '/health',
    intervalMs: DEFAULT_HEALTH_INTERVAL_MS,
    timeoutMs: DEFAULT_HEALTH_TIMEOUT_MS,
    unhealthyThreshold: DEFAULT_UNHEALTHY_THRESHOLD,
    healthyThreshold: DEFAULT_HEALTHY_THRESHOLD,
  },
  passive: { enabled: true, consecutiveFailures: DEFAULT_CONSECUTIVE_FAILURES },
  ejection: { baseMs: DEFAULT_BASE_EJECTION_MS, maxMs: DEFAULT_MAX_EJECTION_MS },
  clearIndexOnRestart: true,
} as const;

const D = DEFAULT_HEALTH_CONFIG;

/** The `health:` section: every field documented, defaults applied. */
export const healthSchema = optionalSection({
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

export type HealthConfig = z.output<typeof healthSchema>;
