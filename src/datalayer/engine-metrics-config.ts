/** `engineMetrics:` section: the data layer's polling of engines' Prometheus endpoints. */
import type { z } from 'zod';
import { ALWAYS, bool, int, num, optionalSection } from '../util/schema.js';

/** GIE scrapes engine metrics; without them the router is blind to others' traffic. */
export const DEFAULT_ENGINE_METRICS_ENABLED = true;
/** 100 ms: queue depth changes on the timescale of a decode step batch. */
export const DEFAULT_POLL_INTERVAL_MS = 100;
/**
 * An idle engine (no load number moved, nothing sent or finished there since) is polled at
 * doubling spacing up to this (capped at half of staleAfterMs, so its reading never goes
 * stale): its page says the same thing each time (docs/decisions/0204-router-background-cpu.md).
 */
export const DEFAULT_IDLE_POLL_INTERVAL_MS = 400;
/** A scrape slower than this is abandoned; well inside the staleness window. */
export const DEFAULT_POLL_TIMEOUT_MS = 500;
/** After 10 missed polls engine numbers are more misleading than router-side accounting. */
export const DEFAULT_STALE_AFTER_MS = 1000;
/**
 * 1: the poll interval alone. Engines with an expensive /metrics page (vLLM on a small CPU
 * host: ~13 ms in its API server) want 0.01, a scrape about every 1.3 s; as a default that
 * starved cheap pages on a loaded host (docs/decisions/0121-real-vllm-shared-prefix-loss.md).
 */
export const DEFAULT_MAX_SCRAPE_SHARE = 1;

/** A hanging engine holds one slot until its timeout; 16 leaves room for the rest of a large pool. */
export const DEFAULT_POLL_MAX_CONCURRENCY = 16;
/** Three of our requests finishing without any number moving is not a coincidence. */
export const DEFAULT_FROZEN_AFTER_COMPLETIONS = 3;
/** About a short answer's decode time: long enough to carry a burst, short enough to forget a stale page. */
export const DEFAULT_UNOBSERVED_HALF_LIFE_MS = 1000;

export const engineMetricsSchema = optionalSection({
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

export type EngineMetricsConfig = z.output<typeof engineMetricsSchema>;
