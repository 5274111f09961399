/** The `health:` configuration section's shape and defaults (parsed in src/config/sections/health.ts). */
import type { HealthSection } from '../config/sections/health.js';

/** The parsed `health:` section: its schema (src/config/sections/health.ts) documents every field. */
export type HealthConfig = HealthSection;

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
