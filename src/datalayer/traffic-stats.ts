/**
 * What the traffic looks like right now, over a sliding window: how much of it reuses a
 * prefix seen before, how concentrated it is on one prefix, and per engine how often the
 * router predicted a cache hit versus how much the engine confirmed.
 *
 * Why: the right strategy depends on these numbers (low reuse → balance load; high reuse
 * on few engines → affinity; high reuse on many → cache-aware with load fallback), so they
 * are measured, not guessed. The `auto` profile handler and telemetry read `snapshot()`.
 *
 * The window is a ring of time buckets (default 12 × 5 s); a bucket is cleared when the
 * ring comes round to it, so memory is bounded by buckets × the per-bucket key cap, plus
 * the bounded "seen before" set.
 */
import type { EndpointTraffic, TrafficSnapshot } from '../framework/signal-view.js';
import type { Clock } from '../util/clock.js';

export interface TrafficStatsOptions {
  /** Length of the sliding window (default 60 s). */
  readonly windowMs: number;
  /** Number of buckets the window is cut into (default 12). */
  readonly buckets: number;
  /** Distinct prefix keys remembered for "seen before" (default 50 000, LRU). */
  readonly maxSeenKeys: number;
  /** A key not seen for this long no longer counts as reuse (default = windowMs × 5). */
  readonly seenTtlMs?: number;
  /** Distinct keys counted per bucket for the hottest-prefix share (default 4096). */
  readonly maxKeysPerBucket: number;
}

export const DEFAULT_TRAFFIC_STATS: TrafficStatsOptions = {
  windowMs: 60_000,
  buckets: 12,
  maxSeenKeys: 50_000,
  maxKeysPerBucket: 4096,
};

interface EpSums {
  requests: number;
  matched: number;
  total: number;
  promptTokens: number;
  cachedTokens: number;
  confirmed: number;
}

interface Bucket {
  /** Bucket start, aligned to the bucket width. NaN = empty. */
  startMs: number;
  requests: number;
  reused: number;
  keys: Map<number, number>;
  overflow: number;
  endpoints: Map<string, EpSums>;
}

export class TrafficStats {
  private readonly width: number;
  private readonly ring: Bucket[];
  private readonly seen = new Map<number, number>();
  private readonly seenTtl: number;

  constructor(
    private readonly clock: Clock,
    private readonly opts: TrafficStatsOptions = DEFAULT_TRAFFIC_STATS,
  ) {
    const n = Math.max(1, Math.floor(opts.buckets));
    this.width = Math.max(1, opts.windowMs / n);
    this.ring = Array.from({ length: n }, () => emptyBucket());
    this.seenTtl = opts.seenTtlMs ?? opts.windowMs * 5;
  }

  /**
   * Records a routed request.
   * @param prefixKey hash of the request's leading prefix blocks (same text → same key);
   *   undefined when the request has no usable prefix.
   */
  recordDecision(prefixKey: number | undefined, endpointId: string, matchedBlocks: number, totalBlocks: number): void {
    const now = this.clock.nowMs();
    const b = this.bucket(now);
    b.requests++;
    if (prefixKey !== undefined) {
      const last = this.seen.get(prefixKey);
      if (last !== undefined && now - last <= this.seenTtl) b.reused++;
      this.seen.delete(prefixKey);
      this.seen.set(prefixKey, now);
      if (this.seen.size > this.opts.maxSeenKeys) {
        const oldest = this.seen.keys().next();
        if (!oldest.done) this.seen.delete(oldest.value);
      }
      const c = b.keys.get(prefixKey);
      if (c !== undefined) b.keys.set(prefixKey, c + 1);
      else if (b.keys.size < this.opts.maxKeysPerBucket) b.keys.set(prefixKey, 1);
      else b.overflow++;
    }
    const e = epSums(b, endpointId);
    e.requests++;
    e.matched += Math.max(0, matchedBlocks);
    e.total += Math.max(0, totalBlocks);
  }

  /** Records what the engine reported for a finished request (usage), if anything. */
  recordOutcome(endpointId: string, promptTokens: number | undefined, cachedTokens: number | undefined): void {
    if (promptTokens === undefined || cachedTokens === undefined || promptTokens <= 0) return;
    const e = epSums(this.bucket(this.clock.nowMs()), endpointId);
    e.promptTokens += promptTokens;
    e.cachedTokens += Math.min(cachedTokens, promptTokens);
    e.confirmed++;
  }

  snapshot(): TrafficSnapshot {
    const now = this.clock.nowMs();
    let requests = 0;
    let reused = 0;
    const keys = new Map<number, number>();
    const eps = new Map<string, EpSums>();
    for (const b of this.ring) {
      if (!this.live(b, now)) continue;
      requests += b.requests;
      reused += b.reused;
      for (const [k, c] of b.keys) keys.set(k, (keys.get(k) ?? 0) + c);
      for (const [id, s] of b.endpoints) {
        const t = eps.get(id) ?? { requests: 0, matched: 0, total: 0, promptTokens: 0, cachedTokens: 0, confirmed: 0 };
        t.requests += s.requests;
        t.matched += s.matched;
        t.total += s.total;
        t.promptTokens += s.promptTokens;
        t.cachedTokens += s.cachedTokens;
        t.confirmed += s.confirmed;
        eps.set(id, t);
      }
    }
    let hottest = 0;
    let shared = 0;
    for (const c of keys.values()) {
      if (c > hottest) hottest = c;
      if (c >= 2) shared += c;
    }
    const endpoints: EndpointTraffic[] = [...eps].map(([endpointId, s]) => ({
      endpointId,
      requests: s.requests,
      predictedHitRate: s.total > 0 ? s.matched / s.total : 0,
      ...(s.promptTokens > 0 ? { confirmedHitRate: s.cachedTokens / s.promptTokens } : {}),
      confirmedSamples: s.confirmed,
    }));
    endpoints.sort((a, b) => (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0));
    return {
      windowMs: this.opts.windowMs,
      requests,
      reuseRate: requests > 0 ? reused / requests : 0,
      sharedRate: requests > 0 ? shared / requests : 0,
      hottestPrefixShare: requests > 0 ? hottest / requests : 0,
      distinctPrefixes: keys.size,
      endpoints,
    };
  }

  private live(b: Bucket, now: number): boolean {
    return !Number.isNaN(b.startMs) && now - b.startMs < this.opts.windowMs;
  }

  private bucket(now: number): Bucket {
    const start = Math.floor(now / this.width) * this.width;
    const idx = Math.floor(now / this.width) % this.ring.length;
    let b = this.ring[idx] as Bucket;
    if (b.startMs !== start) {
      b = emptyBucket();
      b.startMs = start;
      this.ring[idx] = b;
    }
    return b;
  }
}

function emptyBucket(): Bucket {
  return { startMs: Number.NaN, requests: 0, reused: 0, keys: new Map(), overflow: 0, endpoints: new Map() };
}

function epSums(b: Bucket, id: string): EpSums {
  let e = b.endpoints.get(id);
  if (e === undefined) {
    e = { requests: 0, matched: 0, total: 0, promptTokens: 0, cachedTokens: 0, confirmed: 0 };
    b.endpoints.set(id, e);
  }
  return e;
}
