/**
 * Runs one scheduling profile over the candidates: filters in order (stopping as soon as
 * none is left), then every scorer (each score clamped to [0,1], NaN counted as 0,
 * multiplied by its weight and summed per candidate), then the placements in order (the
 * first that answers orders the candidates), else the single picker.
 *
 * Why clamp here and not trust scorers: a buggy or misconfigured scorer must not be able
 * to dominate the weighted sum with an out-of-range value. Every plugin call is timed
 * with the injected clock so telemetry can export per-plugin latency.
 *
 * Timing reads the clock once per plugin boundary (a plugin's end is the next one's start)
 * and the loop creates no closures: this runs on every request.
 */
import { RouterError } from '../core/errors.js';
import { zeros } from '../util/double-array.js';
import type { DecisionReason } from '../core/types.js';
import type { Clock } from '../util/clock.js';
import type { Candidate, CycleState, PickResult, Profile } from '../framework/types.js';

export interface PluginTiming {
  readonly plugin: string;
  readonly micros: number;
}

export interface ProfileRun {
  /** Candidates that survived the filters; `order`, `totals` and `scores` index into this. */
  readonly candidates: readonly Candidate[];
  /**
   * Distinct candidate positions, best first (never empty): the whole order, or with
   * `fullOrder` its head (ORDER_HEAD positions, see PickResult).
   */
  readonly order: readonly number[];
  /** The whole order on demand (distinct valid positions), when `order` is only its head. */
  readonly fullOrder?: () => readonly number[];
  readonly reason: DecisionReason;
  /** Weighted sum per candidate. */
  readonly totals: readonly number[];
  /**
   * Clamped raw scores, one array per scorer of the profile (same order), per candidate: the
   * scorer's own array when every score was in range, else a clamped copy.
   */
  readonly scores: readonly ArrayLike<number>[];
  /** Time spent in each plugin call, in call order (empty without a timer). */
  readonly timings: readonly PluginTiming[];
  /** The timer's reading when the picker returned (0 without a timer). */
  readonly endMicros: number;
}

/** Marks positions already in the order (module scratch: the picker is done when it is used). */
let seen = new Uint8Array(64);

/**
 * @param timer microsecond clock for per-plugin timings; omit to skip timing.
 * @throws RouterError NO_ENDPOINT when there are no candidates or a filter leaves none;
 *   INTERNAL when the picker returns no valid position.
 */
export function runProfile(profile: Profile, state: CycleState, input: readonly Candidate[], timer?: () => number): ProfileRun {
  return runProfileTimed(profile, state, input, timer !== undefined ? { nowMs: timer, nowMicros: timer } : undefined, []);
}

/**
 * `runProfile` timed with `clock.nowMicros()` (the scheduler's clock, one object for the
 * life of the process, so this call site stays monomorphic), appending timings to `timings`
 * so the caller can add its own (hooks) to the same array.
 */
export function runProfileTimed(
  profile: Profile,
  state: CycleState,
  input: readonly Candidate[],
  clock: Clock | undefined,
  timings: PluginTiming[],
): ProfileRun {
  if (input.length === 0) throw new RouterError('NO_ENDPOINT', 'no endpoints configured');
  const timer = clock;
  let t = timer !== undefined ? timer.nowMicros() : 0;
  let candidates = input;
  for (const f of profile.filters) {
    candidates = f.filter(state, candidates);
    if (timer !== undefined) {
      const end = timer.nowMicros();
      timings.push({ plugin: f.name, micros: end - t });
      t = end;
    }
    if (candidates.length === 0) {
      throw new RouterError('NO_ENDPOINT', `no eligible endpoint left after filter "${f.name}"`);
    }
  }

  const n = candidates.length;
  // Of the double kind whatever the scores (util/double-array.ts): the pickers read it element by element.
  const totals = zeros(n);
  const scores: ArrayLike<number>[] = [];
  for (const { scorer, weight } of profile.scorers) {
    const raw = scorer.score(state, candidates);
    if (timer !== undefined) {
      const end = timer.nowMicros();
      timings.push({ plugin: scorer.name, micros: end - t });
      t = end;
    }
    let inRange = raw.length === n;
    for (let i = 0; i < n; i++) {
      const v = raw[i]!;
      // Missing and NaN fail `v >= 0` (→ 0); above 1 → 1.
      const s = v >= 0 ? Math.min(v, 1) : 0;
      if (s !== v) inRange = false;
      totals[i] = totals[i]! + s * weight;
    }
    // The scorer's own array is kept when clamping changes nothing (the usual case: a copy of
    // every score per scorer was three fleet-sized arrays per decision for the report alone).
    scores.push(inRange ? raw : clampedCopy(raw, n));
  }

  let picked: PickResult | undefined;
  let pickedBy = profile.picker.name;
  for (const p of profile.placements) {
    picked = p.place(state, candidates, totals);
    if (timer !== undefined) {
      const end = timer.nowMicros();
      timings.push({ plugin: p.name, micros: end - t });
      t = end;
    }
    if (picked !== undefined) {
      pickedBy = p.name;
      break;
    }
  }
  if (picked === undefined) {
    picked = profile.picker.pick(state, candidates, totals);
    if (timer !== undefined) {
      const end = timer.nowMicros();
      timings.push({ plugin: profile.picker.name, micros: end - t });
      t = end;
    }
  }
  const order = distinctPositions(picked.order, n);
  if (order.length === 0) {
    throw new RouterError('INTERNAL', `picker "${pickedBy}" chose no candidate out of ${n}`);
  }
  const full = picked.fullOrder;
  const run: ProfileRun = { candidates, order, reason: picked.reason, totals, scores, timings, endMicros: t };
  return full !== undefined ? { ...run, fullOrder: () => distinctPositions(full(), n) } : run;
}

/** `raw` clamped to [0,1] (missing and NaN → 0), `n` long. */
function clampedCopy(raw: ArrayLike<number>, n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const v = raw[i]!;
    out[i] = v >= 0 ? Math.min(v, 1) : 0;
  }
  return out;
}

/** The valid positions (integers in [0, n)) of `picked`, each once, in order. */
function distinctPositions(picked: readonly number[], n: number): number[] {
  if (seen.length < n) seen = new Uint8Array(Math.max(n, seen.length * 2));
  const order: number[] = [];
  for (const pos of picked) {
    if (Number.isInteger(pos) && pos >= 0 && pos < n && seen[pos] === 0) {
      seen[pos] = 1;
      order.push(pos);
    }
  }
  for (const pos of order) seen[pos] = 0;
  return order;
}
