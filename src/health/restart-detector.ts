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
  queries: number | undefined;
  hits: number | undefined;
  startTime: number | undefined;
}

export class RestartDetector {
  /** The previous scrape's values per engine, updated in place (this runs on every scrape). */
  private readonly last = new Map<string, Seen>();

  /** Compares `signals` with the previous scrape of `id`; returns the reason if it restarted. */
  observe(id: string, signals: EngineSignals): string | undefined {
    const queries = signals.prefixCacheQueries;
    const hits = signals.prefixCacheHits;
    const startTime = signals.processStartTimeSeconds;
    const prev = this.last.get(id);
    if (prev === undefined) {
      this.last.set(id, { queries, hits, startTime });
      return undefined;
    }
    let reason: string | undefined;
    // Start times are whole-process facts; a difference above clock jitter is a new process.
    if (prev.startTime !== undefined && startTime !== undefined && Math.abs(startTime - prev.startTime) > 1) {
      reason = 'process start time changed';
    } else if (prev.queries !== undefined && queries !== undefined && queries < prev.queries) {
      reason = 'counters went backwards';
    } else if (prev.hits !== undefined && hits !== undefined && hits < prev.hits) {
      reason = 'counters went backwards';
    }
    prev.queries = queries;
    prev.hits = hits;
    prev.startTime = startTime;
    return reason;
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
