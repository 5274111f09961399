/**
 * Arrival processes for open-loop load. Constant spacing isolates routing effects from
 * burstiness; Poisson is the usual model of independent users (inference-perf, llm-d,
 * Preble all use it). Both are deterministic given the seed.
 */
import type { Rng } from '../../src/util/rng.js';

export type ArrivalSpec = { readonly kind: 'constant'; readonly qps: number } | { readonly kind: 'poisson'; readonly qps: number };

/** `count` non-decreasing arrival times in ms, the first at 0. */
export function arrivalTimes(spec: ArrivalSpec, count: number, rng: Rng): number[] {
  if (!(spec.qps > 0) || !Number.isFinite(spec.qps)) throw new RangeError(`qps must be positive, got ${spec.qps}`);
  const gapMs = 1000 / spec.qps;
  const out = new Array<number>(count);
  let t = 0;
  for (let i = 0; i < count; i++) {
    out[i] = t;
    if (spec.kind === 'constant') {
      t = (i + 1) * gapMs;
    } else {
      // Exponential gap by inversion; 1 - u is in (0, 1] so the log is finite.
      t += -Math.log(1 - rng.next()) * gapMs;
    }
  }
  return out;
}

/** Same process at another rate (for QPS sweeps). */
export function withQps(spec: ArrivalSpec, qps: number): ArrivalSpec {
  return { ...spec, qps };
}

export function describeArrival(spec: ArrivalSpec): string {
  return `${spec.kind} ${spec.qps} req/s`;
}
