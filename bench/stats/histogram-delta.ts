/**
 * Prometheus histogram deltas (after − before) and quantile estimates from them, the way
 * Prometheus' histogram_quantile does it: find the bucket holding the rank and
 * interpolate linearly inside it. Used for the router's own decision-time histogram.
 */
import type { Sample } from '../../test/kit/prometheus-text.js';

export interface HistogramData {
  /** Cumulative counts by upper bound, ascending (last is +Inf). */
  readonly buckets: ReadonlyArray<{ readonly le: number; readonly count: number }>;
  readonly sum: number;
  readonly count: number;
}

/** Reads histogram `name`, summing series across all labels but `le`. Undefined if absent. */
export function readHistogram(samples: readonly Sample[], name: string): HistogramData | undefined {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  let found = false;
  for (const s of samples) {
    if (s.name === `${name}_bucket`) {
      const le = s.labels['le'] === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels['le']);
      if (Number.isNaN(le)) continue;
      byLe.set(le, (byLe.get(le) ?? 0) + s.value);
      found = true;
    } else if (s.name === `${name}_sum`) {
      sum += s.value;
    } else if (s.name === `${name}_count`) {
      count += s.value;
    }
  }
  if (!found) return undefined;
  const buckets = [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, c]) => ({ le, count: c }));
  return { buckets, sum, count };
}

export function histogramDelta(before: HistogramData | undefined, after: HistogramData): HistogramData {
  if (!before) return after;
  const prev = new Map(before.buckets.map((b) => [b.le, b.count] as const));
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (prev.get(b.le) ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** q-quantile estimate; null when the histogram is empty. Ranks in the +Inf bucket return the last finite bound. */
export function histogramQuantile(h: HistogramData, q: number): number | null {
  const total = h.buckets.length > 0 ? (h.buckets[h.buckets.length - 1] as { count: number }).count : 0;
  if (total <= 0) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (!Number.isFinite(b.le)) return prevLe;
      const inBucket = b.count - prevCount;
      return inBucket <= 0 ? b.le : prevLe + (b.le - prevLe) * ((rank - prevCount) / inBucket);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

export function histogramMean(h: HistogramData): number | null {
  return h.count > 0 ? h.sum / h.count : null;
}
