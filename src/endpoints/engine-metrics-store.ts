/**
 * The latest engine-reported signals per endpoint, each stamped with when it was scraped
 * and when its values last moved, plus per-endpoint scrape bookkeeping for telemetry.
 *
 * Why keep "last changed" apart from "last scraped": an engine whose exporter is stuck
 * answers every scrape with the same numbers, so the scrape age looks fresh while the
 * content is old. The staleness rules (staleness.ts) compare the content age with the
 * traffic the router sent meanwhile to catch that case.
 */
import type { Clock } from '../util/clock.js';
import type { EngineSignals } from './engine-metrics-parser.js';

export interface EngineSample {
  readonly signals: EngineSignals;
  /** Router-clock time the successful scrape completed. */
  readonly scrapedAtMs: number;
  /** Router-clock time any load value last differed from the previous scrape. */
  readonly changedAtMs: number;
  /** Prefix-cache hit rate between the previous and this scrape (counter deltas), if known. */
  readonly intervalHitRate?: number;
}

/** Per-endpoint scrape health, for metrics and the admin endpoint. */
export interface ScrapeStats {
  readonly endpointId: string;
  readonly scrapes: number;
  readonly errors: number;
  readonly consecutiveErrors: number;
  /** Short reason of the last failure (no response bodies). */
  readonly lastError?: string;
  /** Age of the last good sample in ms; Infinity if none. */
  readonly ageMs: number;
  /** Time since the sample's values last changed in ms; Infinity if none. */
  readonly contentAgeMs: number;
  readonly lastDurationMs?: number;
}

export type SampleListener = (endpointId: string, sample: EngineSample) => void;

/**
 * One endpoint's latest sample as a stable handle (`entryOf`): a hot path that reads the same
 * endpoint on every decision keeps the handle instead of looking the id up each time. `live`
 * turns false when the endpoint is forgotten (`retain`); look the id up again then.
 */
export interface SampleEntry {
  readonly sample?: EngineSample;
  readonly live: boolean;
}

interface Entry {
  sample?: EngineSample;
  live: boolean;
  scrapes: number;
  errors: number;
  consecutiveErrors: number;
  lastError?: string;
  lastDurationMs?: number;
}

export class EngineSignalStore {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<SampleListener>();
  private forgotten = 0;

  constructor(private readonly clock: Clock) {}

  /** Changes whenever `retain` forgets an entry (a kept entry handle may then be dead). */
  get generation(): number {
    return this.forgotten;
  }

  /** Records a successful scrape and notifies listeners (synchronously). */
  recordSuccess(endpointId: string, signals: EngineSignals, durationMs?: number): EngineSample {
    const e = this.entry(endpointId);
    const now = this.clock.nowMs();
    const prev = e.sample;
    const changed = prev === undefined || loadChanged(prev.signals, signals);
    let intervalHitRate: number | undefined;
    if (prev !== undefined) {
      const dq = delta(prev.signals.prefixCacheQueries, signals.prefixCacheQueries);
      const dh = delta(prev.signals.prefixCacheHits, signals.prefixCacheHits);
      if (dq !== undefined && dh !== undefined && dq > 0) intervalHitRate = Math.min(1, Math.max(0, dh / dq));
    }
    if (intervalHitRate === undefined && signals.cacheHitRate !== undefined) intervalHitRate = signals.cacheHitRate;
    const sample: EngineSample = {
      signals,
      scrapedAtMs: now,
      changedAtMs: changed ? now : (prev?.changedAtMs ?? now),
      ...(intervalHitRate !== undefined ? { intervalHitRate } : {}),
    };
    e.sample = sample;
    e.scrapes++;
    e.consecutiveErrors = 0;
    if (durationMs !== undefined) e.lastDurationMs = durationMs;
    for (const l of this.listeners) l(endpointId, sample);
    return sample;
  }

  /** Records a failed scrape. The previous good sample stays, ageing. */
  recordError(endpointId: string, reason: string, durationMs?: number): void {
    const e = this.entry(endpointId);
    e.scrapes++;
    e.errors++;
    e.consecutiveErrors++;
    e.lastError = reason.length > 200 ? reason.slice(0, 200) : reason;
    if (durationMs !== undefined) e.lastDurationMs = durationMs;
  }

  get(endpointId: string): EngineSample | undefined {
    return this.entries.get(endpointId)?.sample;
  }

  /** The endpoint's entry handle (see SampleEntry), undefined before its first scrape. */
  entryOf(endpointId: string): SampleEntry | undefined {
    return this.entries.get(endpointId);
  }

  ageMs(endpointId: string): number {
    const s = this.get(endpointId);
    return s === undefined ? Number.POSITIVE_INFINITY : Math.max(0, this.clock.nowMs() - s.scrapedAtMs);
  }

  consecutiveErrors(endpointId: string): number {
    return this.entries.get(endpointId)?.consecutiveErrors ?? 0;
  }

  /** Forgets endpoints that are no longer in the registry. */
  retain(endpointIds: Iterable<string>): void {
    const keep = new Set(endpointIds);
    for (const [id, e] of [...this.entries]) {
      if (keep.has(id)) continue;
      e.live = false;
      this.entries.delete(id);
      this.forgotten++;
    }
  }

  subscribe(listener: SampleListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): ScrapeStats[] {
    const now = this.clock.nowMs();
    const out: ScrapeStats[] = [];
    for (const [endpointId, e] of this.entries) {
      out.push({
        endpointId,
        scrapes: e.scrapes,
        errors: e.errors,
        consecutiveErrors: e.consecutiveErrors,
        ...(e.lastError !== undefined ? { lastError: e.lastError } : {}),
        ageMs: e.sample === undefined ? Number.POSITIVE_INFINITY : Math.max(0, now - e.sample.scrapedAtMs),
        contentAgeMs: e.sample === undefined ? Number.POSITIVE_INFINITY : Math.max(0, now - e.sample.changedAtMs),
        ...(e.lastDurationMs !== undefined ? { lastDurationMs: e.lastDurationMs } : {}),
      });
    }
    return out;
  }

  private entry(id: string): Entry {
    let e = this.entries.get(id);
    if (e === undefined) {
      e = { sample: undefined, live: true, scrapes: 0, errors: 0, consecutiveErrors: 0 };
      this.entries.set(id, e);
    }
    return e;
  }
}

function loadChanged(a: EngineSignals, b: EngineSignals): boolean {
  return (
    a.waiting !== b.waiting ||
    a.running !== b.running ||
    a.kvUsage !== b.kvUsage ||
    a.prefixCacheHits !== b.prefixCacheHits ||
    a.prefixCacheQueries !== b.prefixCacheQueries ||
    a.cacheHitRate !== b.cacheHitRate
  );
}

/** Counter delta; a decrease means the engine restarted, so the new value is the delta. */
function delta(prev: number | undefined, cur: number | undefined): number | undefined {
  if (prev === undefined || cur === undefined) return undefined;
  return cur >= prev ? cur - prev : cur;
}
