/**
 * Paired comparison of interleaved measurements: when two conditions are measured one right
 * after the other, pass after pass, a machine whose speed drifts over minutes moves both
 * samples of a pass alike, so the per-pass difference keeps less of the drift than the
 * difference of two medians does. Reports the median of the per-pass differences and a 90%
 * interval from resampling whole passes (seeded, so a rerun on the same data agrees).
 */
import { seededRng } from '../../src/util/rng.js';
import { median, quantileSorted } from '../../test/kit/percentiles.js';

export interface PairedDifference {
  /** Passes where both conditions have a sample. */
  readonly n: number;
  /** Median of (condition − reference) over those passes; null when there are none. */
  readonly medianDiffMs: number | null;
  /** 5th and 95th percentile of the resampled medians. */
  readonly interval90Ms: readonly [number, number] | null;
}

/** `reference[i]` and `other[i]` are pass i's samples (null: no sample that pass). */
export function pairedDifference(
  reference: readonly (number | null)[],
  other: readonly (number | null)[],
  resamples = 2000,
  seed = 1,
): PairedDifference {
  if (reference.length !== other.length) throw new Error(`paired samples need equal passes (${reference.length} vs ${other.length})`);
  const diffs: number[] = [];
  reference.forEach((a, i) => {
    const b = other[i];
    if (a !== null && b !== null && b !== undefined) diffs.push(b - a);
  });
  if (diffs.length === 0) return { n: 0, medianDiffMs: null, interval90Ms: null };
  const rng = seededRng(seed);
  const medians: number[] = [];
  const draw = new Array<number>(diffs.length);
  for (let r = 0; r < resamples; r++) {
    for (let k = 0; k < diffs.length; k++) draw[k] = diffs[rng.int(diffs.length)] as number;
    medians.push(
      quantileSorted(
        draw.sort((x, y) => x - y),
        0.5,
      ) as number,
    );
  }
  medians.sort((x, y) => x - y);
  return {
    n: diffs.length,
    medianDiffMs: median(diffs),
    interval90Ms: [quantileSorted(medians, 0.05) as number, quantileSorted(medians, 0.95) as number],
  };
}
