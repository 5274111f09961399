/**
 * Notices from successive metric scrapes that an engine process restarted: a cumulative
 * counter went backwards (prefix-cache queries or hits), or the reported process start time
 * changed. A restarted engine's KV cache is empty, so whatever the router believes it holds
 * is wrong and must be forgotten.
 *
 * Why both: counters survive only as long as the process; start time catches a restart
 * between two scrapes that happened to leave the counters higher than before (busy engine,
 * long scrape gap). Engines that expose neither are not covered here (the active checker's
 * "came back after refused connections" rule still is).
 */
import type { EngineSignals } from '../endpoints/engine-metrics-parser.js';

interface Seen {
  queries?: number;
  hits?: number;
  startTime?: number;
}

export class RestartDetector {
  private readonly last = new Map<string, Seen>();

  /** Compares `signals` with the previous scrape of `id`; returns the reason if it restarted. */
  observe(id: string, signals: EngineSignals): string | undefined {
    const prev = this.last.get(id);
    const cur: Seen = {
      ...(signals.prefixCacheQueries !== undefined ? { queries: signals.prefixCacheQueries } : {}),
      ...(signals.prefixCacheHits !== undefined ? { hits: signals.prefixCacheHits } : {}),
      ...(signals.processStartTimeSeconds !== undefined ? { startTime: signals.processStartTimeSeconds } : {}),
    };
    this.last.set(id, cur);
    if (prev === undefined) return undefined;
    // Start times are whole-process facts; a difference above clock jitter is a new process.
    if (prev.startTime !== undefined && cur.startTime !== undefined && Math.abs(cur.startTime - prev.startTime) > 1) {
      return 'process start time changed';
    }
    if (prev.queries !== undefined && cur.queries !== undefined && cur.queries < prev.queries) return 'counters went backwards';
    if (prev.hits !== undefined && cur.hits !== undefined && cur.hits < prev.hits) return 'counters went backwards';
    return undefined;
  }

  /** Starts over for `id` (its next scrape is a new baseline), e.g. after a restart was handled. */
  reset(id: string): void {
    this.last.delete(id);
  }

  retain(ids: Iterable<string>): void {
    const keep = new Set(ids);
    for (const id of [...this.last.keys()]) if (!keep.has(id)) this.last.delete(id);
  }
}
