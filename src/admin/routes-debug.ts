/**
 * Explain on demand (admin server, JSON):
 *   GET /debug/endpoints       what the router believes about each endpoint right now: load
 *                              snapshot, engine-signal age and scrape errors, prefix-index size
 *   GET /debug/decisions?n=N   the last N decisions (newest first) with per-candidate scores
 *                              and, once finished, their outcome; N defaults to 20 and is
 *                              capped by telemetry.recentDecisions
 * Nothing here contains prompt text: decisions are recorded as ids, labels and numbers.
 */
import type { AdminServer } from './admin-server.js';
import { sendJson } from './admin-server.js';
import type { RecentDecisions } from '../telemetry/recent-decisions.js';

export const DEFAULT_DECISIONS_N = 20;

export interface DebugSources {
  readonly recent: RecentDecisions;
  endpoints(): unknown;
}

/** Parses `n`: a positive integer, capped; undefined → default. Returns an error string when invalid. */
export function parseCount(raw: string | null, cap: number): number | string {
  if (raw === null || raw === '') return Math.min(DEFAULT_DECISIONS_N, cap);
  if (!/^\d{1,9}$/.test(raw)) return 'n must be a non-negative integer';
  return Math.min(Number(raw), cap);
}

export function registerDebugRoutes(admin: AdminServer, sources: DebugSources): void {
  admin.addRoute('GET', '/debug/endpoints', (_req, res) => {
    sendJson(res, 200, sources.endpoints());
  });
  admin.addRoute('GET', '/debug/decisions', (_req, res, url) => {
    const n = parseCount(url.searchParams.get('n'), sources.recent.capacity);
    if (typeof n === 'string') {
      sendJson(res, 400, { error: n });
      return;
    }
    const decisions = sources.recent.latest(n);
    sendJson(res, 200, { capacity: sources.recent.capacity, kept: sources.recent.length, count: decisions.length, decisions });
  });
}
