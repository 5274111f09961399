/**
 * Percentiles by linear interpolation between closest ranks (Hyndman–Fan type 7, the
 * default of numpy and of most benchmark tools), so p50 of [1,2,3,4] is 2.5 and small
 * samples are not rounded onto one observation. Empty input gives null, never 0: a
 * contender with no successful request has no latency, not a zero latency.
 */

/** q in [0,1] of an ascending-sorted array. */
export function quantileSorted(sorted: readonly number[], q: number): number | null {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile must be in [0,1], got ${q}`);
  const n = sorted.length;
  if (n === 0) return null;
  const h = (n - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (h - lo) * (b - a);
}

/** The median of unsorted values (null when there are none). */
export function median(values: readonly number[]): number | null {
  return quantileSorted(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

export interface Distribution {
  readonly count: number;
  readonly mean: number | null;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const n = sorted.length;
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: n,
    mean: n === 0 ? null : sum / n,
    p50: quantileSorted(sorted, 0.5),
    p90: quantileSorted(sorted, 0.9),
    p99: quantileSorted(sorted, 0.99),
    max: n === 0 ? null : (sorted[n - 1] as number),
  };
}
