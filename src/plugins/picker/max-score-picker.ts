/**
 * Max-score picker: orders candidates by weighted total, best first; exact ties are broken
 * by the cycle's seeded Rng, so equally good endpoints share the traffic instead of the
 * first one taking it all (the "always index 0" collapse seen in other routers).
 *
 * Reason: `spill` when the hotspot filter replicated the prefix onto this engine; else from
 * the cycle's affinity evidence when an affinity scorer ran (affinity, load, cold or
 * imbalance — see shared/affinity-reason.ts); otherwise the filters' hint, otherwise the
 * configured default (`load`). Cold requests can be placed differently by a placement
 * plugin before this picker runs (placement/cold-request-placement.ts).
 */
import { DECISION_REASONS, type DecisionReason } from '../../core/types.js';
import { definePlugin } from '../../framework/plugin-api.js';
import { ORDER_HEAD, type Candidate, type CycleState, type Picker, type PickResult } from '../../framework/types.js';
import type { Rng } from '../../util/rng.js';
import { oneOf, section } from '../../util/schema.js';
import { affinityReason } from '../shared/affinity-reason.js';

export const MAX_SCORE_PICKER = 'max-score-picker';

export class MaxScorePicker implements Picker {
  constructor(
    readonly name: string,
    private readonly defaultReason: DecisionReason = 'load',
  ) {}

  pick(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult {
    const r = rankByDescending(state, totals);
    return { ...r, reason: decisionReason(state, candidates, r.order[0]!, this.defaultReason) };
  }
}

/**
 * The reason label of a scored decision: a hotspot spill narrows the candidates to the one
 * engine it chose (its label is certain); else the affinity evidence; else the hint; else
 * `fallback`.
 */
export function decisionReason(
  state: CycleState,
  candidates: readonly Candidate[],
  chosen: number,
  fallback: DecisionReason,
): DecisionReason {
  return state.reasonHint === 'spill' ? 'spill' : (affinityReason(state, candidates, chosen) ?? state.reasonHint ?? fallback);
}

/** Up to this many candidates the order is built by insertion (n²) instead of sorted or selected. */
const INSERTION_MAX = 16;

/** A ranking's head (its first ORDER_HEAD positions) and, when that is not all, the rest on demand. */
export interface Ranking {
  readonly order: number[];
  readonly fullOrder?: () => readonly number[];
}

/**
 * Candidate indices by value, highest first; exact ties in seeded random order (the whole
 * order at once; `rankByDescending` is what pickers call).
 */
export function orderByDescending(state: CycleState, totals: ArrayLike<number>): number[] {
  const r = rankByDescending(state, totals);
  return r.fullOrder !== undefined ? [...r.fullOrder()] : r.order;
}

/**
 * Candidate indices by value, highest first; exact ties in seeded random order: the key is
 * (total desc, tie key asc, index asc), a strict total order, with one tie key drawn per
 * candidate in index order whatever n is (so every way of ranking gives the same order and
 * leaves the Rng in the same state).
 *
 * Why three ways: up to INSERTION_MAX candidates the whole order is built by insertion (no
 * comparator calls, nothing to defer; n²/4 moves would be most of a fleet's decision). Above that a decision needs only the head (the
 * chosen endpoint and its fallbacks): it is selected in one pass (each candidate is compared
 * with the head's last entry and inserted only when it ranks before it, O(n) plus a few
 * insertions), and the whole order — which only the score report reads — is sorted on
 * demand from the same keys. Sorting every candidate on every decision was most of the pick
 * at 1,024 endpoints. NaN totals have no place in that order: with one the whole order is
 * sorted at once, as before.
 */
export function rankByDescending(state: CycleState, totals: ArrayLike<number>): Ranking {
  const n = totals.length;
  if (n <= INSERTION_MAX) return { order: insertionOrder(state, totals) };
  // A generator that can replay its draws lets the whole order draw the keys again on demand,
  // so a decision keeps none (a fleet-sized array of them per decision, kept for the score
  // report alone, was most of what the pick allocated).
  const replay = state.rng.snapshot?.();
  if (headKeys.length < n) headKeys = new Float64Array(Math.max(n, headKeys.length * 2));
  const keys: number[] | Float64Array = replay !== undefined ? headKeys : new Array<number>(n);
  let nan = false;
  for (let i = 0; i < n; i++) {
    keys[i] = state.rng.next();
    if (Number.isNaN(totals[i]!)) nan = true;
  }
  if (nan || n <= ORDER_HEAD) return { order: mergeOrder(keys, totals) };
  const order = selectHead(keys, totals, ORDER_HEAD);
  if (replay === undefined) return { order, fullOrder: () => mergeOrder(keys, totals) };
  return { order, fullOrder: () => mergeOrder(drawKeys(replay, n), totals) };
}

/** The keys of a ranking drawn again: `n` draws from a copy of `replay`. */
function drawKeys(replay: Rng, n: number): number[] {
  const rng = replay.snapshot?.() ?? replay;
  const keys = new Array<number>(n);
  for (let i = 0; i < n; i++) keys[i] = rng.next();
  return keys;
}

/** The tie keys of the current ranking (reused: only its head is selected from them). */
let headKeys = new Float64Array(0);

/** Insertion sort by (total desc, random key asc, index asc) of a small pool. */
function insertionOrder(state: CycleState, totals: ArrayLike<number>): number[] {
  const n = totals.length;
  const order = new Array<number>(n);
  const tie = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t = totals[i]!;
    const k = state.rng.next();
    let j = i;
    while (j > 0) {
      const prev = order[j - 1]!;
      const pt = totals[prev]!;
      if (pt > t || (pt === t && tie[j - 1]! <= k)) break;
      order[j] = prev;
      tie[j] = tie[j - 1]!;
      j--;
    }
    order[j] = i;
    tie[j] = k;
  }
  return order;
}

/**
 * The first `size` positions of the order (total desc, key asc, index asc), best first:
 * a bounded insertion list. Candidates come in index order, so on equal total and key the
 * earlier one already ranks first (`<=` keeps it ahead).
 */
function selectHead(keys: ArrayLike<number>, totals: ArrayLike<number>, size: number): number[] {
  const head: number[] = [];
  const n = totals.length;
  for (let i = 0; i < n; i++) {
    const t = totals[i]!;
    const k = keys[i]!;
    let j = head.length;
    if (j === size) {
      const last = head[j - 1]!;
      const lt = totals[last]!;
      if (lt > t || (lt === t && keys[last]! <= k)) continue;
      j--;
    } else {
      head.push(i);
    }
    while (j > 0) {
      const prev = head[j - 1]!;
      const pt = totals[prev]!;
      if (pt > t || (pt === t && keys[prev]! <= k)) break;
      head[j] = prev;
      j--;
    }
    head[j] = i;
  }
  return head;
}

/** Length of the insertion-sorted runs mergeOrder starts merging from. */
const MERGE_RUN = 16;

/** Reused sort buffers (grown on demand): a full order allocates only the order it returns. */
let totalBuf = new Float64Array(0);
let keyBuf = new Float64Array(0);
let idxA = new Int32Array(0);
let idxB = new Int32Array(0);

/**
 * The whole order: a bottom-up merge sort over index buffers with the comparison inlined
 * (Array.prototype.sort with a comparator closure was most of a 256-endpoint decision's
 * pick), from insertion-sorted runs. The key (total desc, tie key asc, index asc) is a
 * strict total order, so the result is the one any correct sort gives.
 */
function mergeOrder(tieKeys: ArrayLike<number>, totals: ArrayLike<number>): number[] {
  const n = totals.length;
  if (totalBuf.length < n) {
    const cap = Math.max(n, totalBuf.length * 2);
    totalBuf = new Float64Array(cap);
    keyBuf = new Float64Array(cap);
    idxA = new Int32Array(cap);
    idxB = new Int32Array(cap);
  }
  const keys = keyBuf;
  const t = totalBuf;
  for (let i = 0; i < n; i++) {
    keys[i] = tieKeys[i]!;
    t[i] = totals[i]!;
    idxA[i] = i;
  }
  let src = idxA;
  let dst = idxB;
  // Runs of MERGE_RUN sorted by insertion first: four merge passes fewer over the fleet.
  for (let lo = 0; lo < n; lo += MERGE_RUN) {
    const hi = Math.min(lo + MERGE_RUN, n);
    for (let i = lo + 1; i < hi; i++) {
      const a = src[i]!;
      const ta = t[a]!;
      const ka = keys[a]!;
      let j = i - 1;
      for (; j >= lo; j--) {
        const b = src[j]!;
        const tb = t[b]!;
        if (tb > ta || (tb === ta && (keys[b]! < ka || (keys[b] === ka && b < a)))) break;
        src[j + 1] = b;
      }
      src[j + 1] = a;
    }
  }
  for (let width = MERGE_RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        const a = src[i]!;
        const b = src[j]!;
        const ta = t[a]!;
        const tb = t[b]!;
        // a first when it ranks before b: higher total, then lower key, then lower index.
        if (ta > tb || (ta === tb && (keys[a]! < keys[b]! || (keys[a] === keys[b] && a < b)))) {
          dst[k++] = a;
          i++;
        } else {
          dst[k++] = b;
          j++;
        }
      }
      while (i < mid) dst[k++] = src[i++]!;
      while (j < hi) dst[k++] = src[j++]!;
    }
    const tmp = src;
    src = dst;
    dst = tmp;
  }
  const order = new Array<number>(n);
  for (let i = 0; i < n; i++) order[i] = src[i]!;
  return order;
}

export const maxScorePicker = definePlugin({
  type: MAX_SCORE_PICKER,
  description: 'Orders candidates by weighted total score, best first; exact ties in seeded random order.',
  parameters: section({
    reason: oneOf(DECISION_REASONS as unknown as readonly [DecisionReason, ...DecisionReason[]])
      .default('load')
      .describe('Reason label when neither affinity evidence nor a filter hint decides it.'),
  }),
  create: (name, p) => new MaxScorePicker(name, p.reason),
});
