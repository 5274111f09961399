/**
 * Merges engine-reported load (complete but as old as the last scrape) with the router's
 * own accounting (exact for what this router sent, blind to everything else), trusting
 * the engine numbers by their age.
 *
 * Rules (all per endpoint):
 *  1. Gap filling. The engine's queue at scrape time is moved forward by what the router
 *     did since: queue ≈ (waiting + running at scrape) + routed since − completed since,
 *     floored at 0 and never below the router's own in-flight count (those requests are
 *     certainly there).
 *  2. Age decay. The part of that estimate the router cannot see itself (the excess over
 *     its own in-flight count: other routers' traffic, engine-internal queueing) is scaled
 *     by 1 − age/staleAfterMs, so it fades out as the scrape ages instead of flipping.
 *  3. Fallback. Beyond staleAfterMs, or with no sample at all, only router-side accounting
 *     is used (waiting/running/kvUsage are left unset) and a fallback is counted.
 *  4. Frozen exporter. A page whose load values have not changed although the router saw
 *     at least `frozenAfterCompletions` of its requests finish there since the last change
 *     is old whatever its scrape time says: its age is taken from the last change.
 *     (Completions move an engine's counters and gauges; identical numbers mean a stuck
 *     exporter, e.g. the sim engine's /admin/freeze-metrics.)
 */
import type { Clock } from '../util/clock.js';
import type { EngineSample, EngineSignalStore } from './engine-metrics-store.js';

export type FallbackReason = 'missing' | 'age' | 'frozen';
export const FALLBACK_REASONS: readonly FallbackReason[] = ['missing', 'age', 'frozen'];

export interface StalenessOptions {
  /** Engine signals older than this are ignored (router accounting only). */
  readonly staleAfterMs: number;
  /** Completions without any change in the engine's numbers before they count as frozen (default 3). */
  readonly frozenAfterCompletions?: number;
  /** Metric hook: called once per fallback (per endpoint per merge). */
  readonly onFallback?: (endpointId: string, reason: FallbackReason) => void;
}

/** Engine-side fields of a LoadSnapshot after the staleness rules. */
export interface MergedEngineLoad {
  /** Estimated queued requests (engine view moved forward), unset on fallback. */
  readonly waiting?: number;
  /** Estimated running requests, unset on fallback. */
  readonly running?: number;
  /** Engine KV usage in [0,1], unset on fallback. */
  readonly kvUsage?: number;
  /** Effective age of the engine signals (content age when frozen); Infinity if none. */
  readonly metricsAgeMs: number;
  /** Whether the router fell back to its own accounting, and why. */
  readonly fallback?: FallbackReason;
}

export interface StalenessStats {
  readonly fallbacks: Readonly<Record<FallbackReason, number>>;
  /** Endpoints currently judged frozen. */
  readonly frozenEndpoints: readonly string[];
}

interface Marks {
  routed: number;
  completed: number;
  routedAtScrape: number;
  completedAtScrape: number;
  completedAtChange: number;
  lastChangedAtMs: number;
}

export class StalenessTracker {
  private readonly marks = new Map<string, Marks>();
  private readonly fallbacks: Record<FallbackReason, number> = { missing: 0, age: 0, frozen: 0 };
  private readonly frozen = new Set<string>();
  private readonly frozenAfter: number;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: EngineSignalStore,
    private readonly clock: Clock,
    private readonly opts: StalenessOptions,
  ) {
    this.frozenAfter = Math.max(1, opts.frozenAfterCompletions ?? 3);
    this.unsubscribe = store.subscribe((id, sample) => this.onSample(id, sample));
  }

  /** Router accounting: a request was sent to the endpoint. */
  onRouted(endpointId: string): void {
    this.mark(endpointId).routed++;
  }

  /** Router accounting: a request sent to the endpoint finished (however it finished). */
  onCompleted(endpointId: string): void {
    this.mark(endpointId).completed++;
  }

  /**
   * Engine-side load for one endpoint after the staleness rules.
   * @param ownInflight the router's exact in-flight count for the endpoint.
   */
  merge(endpointId: string, ownInflight: number): MergedEngineLoad {
    const sample = this.store.get(endpointId);
    if (sample === undefined) return this.fallback(endpointId, 'missing', Number.POSITIVE_INFINITY);
    const m = this.mark(endpointId);
    const now = this.clock.nowMs();
    let ageMs = Math.max(0, now - sample.scrapedAtMs);
    const completedSinceChange = m.completed - m.completedAtChange;
    if (sample.changedAtMs < sample.scrapedAtMs && completedSinceChange >= this.frozenAfter) {
      ageMs = Math.max(ageMs, now - sample.changedAtMs);
      this.frozen.add(endpointId);
      if (ageMs > this.opts.staleAfterMs) return this.fallback(endpointId, 'frozen', ageMs);
    } else {
      this.frozen.delete(endpointId);
    }
    if (ageMs > this.opts.staleAfterMs) return this.fallback(endpointId, 'age', ageMs);

    const s = sample.signals;
    const out: { -readonly [K in keyof MergedEngineLoad]: MergedEngineLoad[K] } = { metricsAgeMs: ageMs };
    if (s.waiting !== undefined || s.running !== undefined) {
      const engineRunning = s.running ?? 0;
      const atScrape = (s.waiting ?? 0) + engineRunning;
      const moved = Math.max(0, atScrape + (m.routed - m.routedAtScrape) - (m.completed - m.completedAtScrape));
      const trust = this.opts.staleAfterMs > 0 ? Math.max(0, 1 - ageMs / this.opts.staleAfterMs) : 1;
      const unseen = Math.max(0, moved - ownInflight);
      const total = ownInflight + unseen * trust;
      const running = Math.min(engineRunning, total);
      out.running = running;
      out.waiting = total - running;
    }
    if (s.kvUsage !== undefined) out.kvUsage = s.kvUsage;
    return out;
  }

  /** Forgets endpoints no longer in the registry. */
  retain(endpointIds: Iterable<string>): void {
    const keep = new Set(endpointIds);
    for (const id of [...this.marks.keys()]) if (!keep.has(id)) this.marks.delete(id);
    for (const id of [...this.frozen]) if (!keep.has(id)) this.frozen.delete(id);
  }

  stats(): StalenessStats {
    return { fallbacks: { ...this.fallbacks }, frozenEndpoints: [...this.frozen] };
  }

  /** Detaches from the signal store. */
  close(): void {
    this.unsubscribe();
  }

  private onSample(endpointId: string, sample: EngineSample): void {
    const m = this.mark(endpointId);
    m.routedAtScrape = m.routed;
    m.completedAtScrape = m.completed;
    if (sample.changedAtMs !== m.lastChangedAtMs) {
      m.lastChangedAtMs = sample.changedAtMs;
      m.completedAtChange = m.completed;
    }
  }

  private fallback(endpointId: string, reason: FallbackReason, ageMs: number): MergedEngineLoad {
    this.fallbacks[reason]++;
    this.opts.onFallback?.(endpointId, reason);
    return { metricsAgeMs: ageMs, fallback: reason };
  }

  private mark(id: string): Marks {
    let m = this.marks.get(id);
    if (m === undefined) {
      m = { routed: 0, completed: 0, routedAtScrape: 0, completedAtScrape: 0, completedAtChange: 0, lastChangedAtMs: Number.NaN };
      this.marks.set(id, m);
    }
    return m;
  }
}
