/** `engineMetrics:` section: the data layer's polling of engines' Prometheus endpoints. */
import type { z } from 'zod';
import { ALWAYS, bool, int, num, optionalSection } from '../../util/schema.js';
import {
  DEFAULT_ENGINE_METRICS_ENABLED,
  DEFAULT_IDLE_POLL_INTERVAL_MS,
  DEFAULT_MAX_SCRAPE_SHARE,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_POLL_TIMEOUT_MS,
  DEFAULT_STALE_AFTER_MS,
} from '../defaults.js';
import type { ConfigSection } from '../config-section.js';

/** A hanging engine holds one slot until its timeout; 16 leaves room for the rest of a large pool. */
export const DEFAULT_POLL_MAX_CONCURRENCY = 16;
/** Three of our requests finishing without any number moving is not a coincidence. */
export const DEFAULT_FROZEN_AFTER_COMPLETIONS = 3;
/** About a short answer's decode time: long enough to carry a burst, short enough to forget a stale page. */
export const DEFAULT_UNOBSERVED_HALF_LIFE_MS = 1000;

const schema = optionalSection({
  enabled: bool().default(DEFAULT_ENGINE_METRICS_ENABLED).describe("Poll engines' /metrics; off = router-side accounting only."),
  pollIntervalMs: int({ min: 10, max: 60_000 }).default(DEFAULT_POLL_INTERVAL_MS),
  idlePollIntervalMs: int({ min: 10, max: 3_600_000 })
    .default(DEFAULT_IDLE_POLL_INTERVAL_MS)
    .describe(
      "Longest spacing of an idle engine's scrapes (its numbers did not move and the router sent it nothing since); capped at half of staleAfterMs; at or below pollIntervalMs: no backoff.",
    ),
  timeoutMs: int({ min: 1, max: 60_000 }).default(DEFAULT_POLL_TIMEOUT_MS),
  staleAfterMs: int({ min: 1, max: 3_600_000 }).default(DEFAULT_STALE_AFTER_MS).describe('Engine signals older than this are not trusted.'),
  maxConcurrency: int({ min: 1, max: 10_000 }).default(DEFAULT_POLL_MAX_CONCURRENCY),
  maxScrapeShare: num({ minExclusive: 0, max: 1 })
    .default(DEFAULT_MAX_SCRAPE_SHARE)
    .describe(
      "Share of an engine's time the router's scrapes may take: the next scrape waits at least the last one's duration ÷ this (1 = poll interval only).",
    ),
  frozenAfterCompletions: int({ min: 1, max: 1_000_000 }).default(DEFAULT_FROZEN_AFTER_COMPLETIONS),
  unobservedHalfLifeMs: int({ min: 1, max: 3_600_000 }).default(DEFAULT_UNOBSERVED_HALF_LIFE_MS),
}).superRefine((s, ctx) => {
  if (typeof s !== 'object' || s === null) return;
  if (typeof s.staleAfterMs !== 'number' || typeof s.pollIntervalMs !== 'number' || typeof s.timeoutMs !== 'number') return;
  if (s.staleAfterMs <= s.pollIntervalMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['staleAfterMs'],
      message: `must be greater than pollIntervalMs (${s.pollIntervalMs}), or every reading is stale`,
    });
  }
  if (s.timeoutMs > s.staleAfterMs)
    ctx.addIssue({ code: 'custom', path: ['timeoutMs'], message: `must not exceed staleAfterMs (${s.staleAfterMs})` });
}, ALWAYS);

export type EngineMetricsConfig = z.output<typeof schema>;

export const engineMetricsSection = { key: 'engineMetrics', schema } as const satisfies ConfigSection;
