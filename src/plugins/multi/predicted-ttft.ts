/**
 * Route by predicted time to first token: a scorer and a picker over the ttft-model
 * plugin's per-candidate predictions (multi/ttft-model-plugin.ts).
 *
 * Why: the weighted blend of prefix, queue and KV scores has no unit, so nobody can say what
 * a score difference costs a user. A prediction in milliseconds answers the question the
 * blend approximates, "where does this request get its first token soonest", and weighs
 * cache reuse against queued work in one currency.
 *
 * Picker without an objective: the smallest cost wins (the prediction plus the future-reuse
 * terms, `costs`). Predictions within
 * max(tieMs, tieFraction × best) of the best are near-ties, broken by the fewest recent
 * placements (decayed counts, `spreadHalfLifeMs`) and then by the seeded Rng, so cold
 * requests (equal predictions on idle engines) still spread over the pool.
 *
 * With a TTFT objective (request header `sloHeader`, milliseconds): the engines predicted
 * to meet it come first, the one with the least headroom first (best fit, llm-d's `least`:
 * it keeps the engines with room for requests with tighter objectives); when none meets it,
 * a sheddable request (priority < 0, as admission defines it) is refused with OVERLOADED
 * (429 + Retry-After: the predicted excess, at least `minRetryAfterMs`), any other goes to
 * the best prediction.
 *
 * Score (for use in a weighted profile): best prediction ÷ this candidate's, in (0,1];
 * neutral value 1 when all predictions are equal.
 */
import { RouterError } from '../../core/errors.js';
import { definePlugin } from '../../framework/plugin-api.js';
import { ORDER_HEAD, type Candidate, type CycleState, type Picker, type PickResult, type Scorer } from '../../framework/types.js';
import { int, num, section, str } from '../../util/schema.js';
import { affinityReason } from '../shared/affinity-reason.js';
import { DecayedCounts } from '../shared/decayed-counts.js';
import { staleAfter, staleAfterParam } from '../shared/params.js';
import { FEATURE, TTFT_MODEL_PLUGIN, ttftModelPlugin, type TtftModelPlugin } from './ttft-model-plugin.js';
import { sortRange } from '../../util/sort-range.js';

export const PREDICTED_TTFT = 'predicted-ttft';

/** The objective header's value in ms: a positive finite number up to 10 minutes, else none. */
export function parseObjectiveMs(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  if (t === '' || t.length > 16) return undefined;
  const n = Number(t);
  return Number.isFinite(n) && n > 0 && n <= 600_000 ? n : undefined;
}

export interface PredictedTtftOptions {
  readonly sloHeader: string;
  readonly prefillPenalty: number;
  readonly reuseWeight: number;
  readonly evictionWeight: number;
  readonly evictionPower: number;
  readonly reuseKvUsage: number;
  readonly reuseQueueWeight: number;
  /** Engine figures older than this are not used (the eviction term). */
  readonly maxMetricsAgeMs: number;
  readonly tieMs: number;
  readonly tieFraction: number;
  readonly spreadHalfLifeMs: number;
  readonly minRetryAfterMs: number;
}

export class PredictedTtftPlugin implements Scorer, Picker {
  private readonly recent: DecayedCounts;
  private readonly header: string;

  constructor(
    readonly name: string,
    private readonly model: TtftModelPlugin,
    private readonly opts: PredictedTtftOptions,
  ) {
    this.recent = new DecayedCounts(opts.spreadHalfLifeMs);
    this.header = opts.sloHeader.toLowerCase();
  }

  score(state: CycleState, candidates: readonly Candidate[]): number[] {
    const pred = this.model.predictions(state, candidates);
    // A fresh array (the decision's score report keeps it); a plain one, ~20× cheaper to allocate than a Float64Array.
    const out = new Array<number>(candidates.length);
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < pred.length; i++) best = Math.min(best, pred[i]!);
    for (let i = 0; i < pred.length; i++) out[i] = pred[i]! > 0 ? Math.min(1, best / pred[i]!) : 1;
    return out;
  }

  pick(state: CycleState, candidates: readonly Candidate[]): PickResult {
    const pred = this.model.predictions(state, candidates);
    const n = candidates.length;
    const objective = parseObjectiveMs(state.request.headers?.get(this.header));
    let order: number[];
    let fullOrder: (() => readonly number[]) | undefined;
    if (objective === undefined) {
      ({ order, fullOrder } = this.nearTieOrder(state, candidates, this.costs(state, candidates, pred)));
    } else {
      const meets: number[] = [];
      const misses: number[] = [];
      for (let i = 0; i < n; i++) (pred[i]! <= objective ? meets : misses).push(i);
      misses.sort((a, b) => pred[a]! - pred[b]!);
      if (meets.length === 0) {
        const best = misses[0];
        if (best !== undefined && (state.request.priority ?? 0) < 0) {
          const excess = pred[best]! - objective;
          throw new RouterError('OVERLOADED', `no engine is predicted to meet the TTFT objective (best ${Math.round(pred[best]!)} ms)`, {
            retryAfterMs: Math.max(this.opts.minRetryAfterMs, Math.ceil(excess)),
          });
        }
        ({ order, fullOrder } = this.nearTieOrder(state, candidates, this.costs(state, candidates, pred)));
      } else {
        // Least headroom first (largest prediction that still meets it).
        meets.sort((a, b) => pred[b]! - pred[a]!);
        order = [...meets, ...misses];
        state.notes.push(`ttft objective met by ${meets.length}/${n}`);
      }
    }
    const chosen = order[0]!;
    this.recent.add(candidates[chosen]!.endpoint.id, state.nowMs);
    return { order, ...(fullOrder !== undefined ? { fullOrder } : {}), reason: affinityReason(state, candidates, chosen) ?? 'load' };
  }

  /**
   * What a placement costs, in ms: the request's own predicted TTFT, plus what it costs the
   * requests that will reuse its prefix later (`reuseWeight`, `evictionWeight`), plus
   * `prefillPenalty` × its uncached prefill time there (the delay that work puts on requests
   * queued behind it). All terms are prefill time at the candidate's learned rate.
   *
   * Future reuse, two terms:
   *  - lost reuse: the part of the prompt one engine alone holds (deeper than the
   *    second-deepest match: a session's history, not a template many engines hold) is
   *    recomputed anywhere else, the fleet pays that work again and keeps two copies of it;
   *    charged on every other candidate (a) `reuseWeight` × those tokens × the fleet's KV
   *    load (mean kvUsage ÷ `reuseKvUsage`, at most 1), and (b) `reuseQueueWeight` × those
   *    tokens × the requests already queued on that candidate;
   *  - eviction: the prompt stays cached for the group's next request only if the engine's
   *    KV cache does not evict it first; charged `evictionWeight` × prompt tokens ×
   *    kvUsage^`evictionPower` (fresh figures only), the chance it must be recomputed.
   * Why: the greedy least-TTFT pick moved a quarter of agentic session turns to engines that
   * were faster for that turn, cut the fleet's hit rate from 86% to 76% and saturated it
   * (bench/results/ttft-reuse at 0bde3a4, agentic-16; in the tree at 80268b2).
   * Why the lost-reuse charge follows load (the same folder, issue 27's second round;
   * dev runs, seeds 1 and 2): at start-up a flat charge kept a hot prefix's requests on the
   * first engine to hold it while the fleet's KV was ~2% used, where a second copy displaces
   * nothing (hot-prefix-16 seed 1: TTFT p99 1.31× cache-aware's flat, 0.99× scaled); at mean
   * KV usage ≥ `reuseKvUsage` the charge is whole. A queue on the candidate is the overload
   * signal: there the recomputed history delays the requests queued behind it, and charging
   * per queued request held agentic sessions with their histories through the load bursts
   * that tipped the flat charge into a ~77%-hit regime (one 2×-slow engine of 16, seed 2).
   * Scaling by the candidate's own KV usage instead made the emptiest engines, where moves
   * go, the cheapest to move to, and lost agentic and the slow-engine fleet.
   * Why `reuseKvUsage` 0.5 and not 0.25 (the fleet studies and 10 seeds of ttft-study's 16-engine
   * agentic cells, issue 27's fourth round): at the seed table's 50% cell the fleet's KV is
   * ~5% used and the charge at 0.25 still held a group's request behind a whole prompt queued
   * on its home engine (p99 258-267 ms, 1.08-1.12× the oracle's; 244-246 ms at 0.5); the hot
   * prefix at 4 and 16 engines 276 → 249 and 352 → 308 ms; the agentic fleets at 40 sessions/s
   * per 16 engines within 0.8× cache-aware's p99 in 8 of 10 seeds (7 at 0.25) and 6 of 10 with
   * one 2×-slow engine (4). 1 (the charge × the mean KV usage) was as good on the fleet studies
   * and worse with the slow engine (4 of 10).
   */
  private costs(state: CycleState, candidates: readonly Candidate[], pred: Float64Array): Float64Array {
    const {
      prefillPenalty: w,
      reuseWeight: reuse,
      evictionWeight: ev,
      evictionPower: power,
      reuseKvUsage: kvRef,
      reuseQueueWeight: rq,
    } = this.opts;
    if (w === 0 && reuse === 0 && ev === 0 && rq === 0) return pred;
    const f = this.model.featureValues(state, candidates);
    const rates = this.model.prefillRates(state, candidates);
    const n = pred.length;
    const tokens = Math.max(0, state.request.promptTokens);
    // The deepest and second-deepest match: the prefix beyond the second is held by one engine only.
    let best = 0;
    let second = 0;
    for (let i = 0; i < n; i++) {
      const c = f[i * FEATURE.stride + FEATURE.cachedTokens]!;
      if (c > best) {
        second = best;
        best = c;
      } else if (c > second) second = c;
    }
    // The fleet's KV load: mean kvUsage over the candidates, one without fresh figures counting as full.
    let reuseScale = 1;
    if (kvRef > 0 && reuse > 0) {
      let kvSum = 0;
      for (let i = 0; i < n; i++) {
        const l = candidates[i]!.load;
        kvSum += l.kvUsage !== undefined && l.metricsAgeMs <= this.opts.maxMetricsAgeMs ? Math.min(1, Math.max(0, l.kvUsage)) : 1;
      }
      reuseScale = Math.min(1, kvSum / n / kvRef);
    }
    if (this.costBuf.length < n) this.costBuf = new Float64Array(2 * n);
    const out = this.costBuf.subarray(0, n);
    for (let i = 0; i < n; i++) {
      const o = i * FEATURE.stride;
      const c = candidates[i]!;
      const msPerToken = 1 / rates[i]!;
      const lost = best - Math.max(f[o + FEATURE.cachedTokens]!, second);
      const u = c.load.kvUsage;
      const fresh = u !== undefined && c.load.metricsAgeMs <= this.opts.maxMetricsAgeMs;
      const kv = ev > 0 && fresh && u > 0 ? Math.min(1, u) ** power : 0;
      const lostCharge = lost > 0 ? lost * (reuse * reuseScale + rq * f[o + FEATURE.aheadRequests]!) : 0;
      out[i] = pred[i]! + msPerToken * (w * f[o + FEATURE.uncachedTokens]! + lostCharge + ev * kv * tokens);
    }
    return out;
  }

  private costBuf = new Float64Array(64);

  /** Per-candidate tie keys, reused across decisions (grown as needed). */
  private count = new Float64Array(64);
  private key = new Float64Array(64);

  /**
   * Ascending by prediction; the near-ties of the best by fewest recent placements, then
   * seeded random. Up to HEAD_ONLY_ABOVE candidates the whole order, by insertion sorts over
   * the reused key buffers. Above it only the head (ORDER_HEAD positions: the chosen endpoint
   * and its fallbacks) is built; the rest is sorted when the score report asks (`fullOrder`).
   * Why: sorting every candidate by prediction, and the near-ties by insertion, was the
   * largest part of a pick at 1,024 endpoints (an idle fleet's cold request ties them all).
   * Both ways give the same order and draw the same tie keys in the same order (the near-ties
   * by prediction, then index), so the choice and the Rng do not depend on the fleet's size.
   */
  private nearTieOrder(state: CycleState, candidates: readonly Candidate[], pred: Float64Array): Ranking {
    const n = candidates.length;
    let best = Number.POSITIVE_INFINITY;
    let nan = false;
    for (let i = 0; i < n; i++) {
      const v = pred[i]!;
      if (Number.isNaN(v)) nan = true;
      else if (v < best) best = v;
    }
    if (n <= HEAD_ONLY_ABOVE || nan) return { order: this.wholeOrder(state, candidates, pred) };
    const limit = best + Math.max(this.opts.tieMs, this.opts.tieFraction * best);
    const ties: number[] = [];
    for (let i = 0; i < n; i++) if (pred[i]! <= limit) ties.push(i);
    if (ties.length > 1) {
      // The near-ties as the whole order's stable sort by prediction lists them.
      ties.sort((a, b) => pred[a]! - pred[b]! || a - b);
      this.breakTies(state, candidates, ties, ties.length);
    }
    // The costs buffer is reused by the next decision; the deferred sort reads a copy. The
    // rest (every position above the limit, in index order) is not kept: the head reads the
    // positions in place and the whole order lists them again on demand (a fleet-sized array
    // grown by push on every decision was most of what the pick allocated).
    const restPred = pred.slice(0, n);
    const byPred = (a: number, b: number): number => restPred[a]! - restPred[b]! || a - b;
    const fullOrder = (): readonly number[] => [...ties, ...above(restPred, limit).sort(byPred)];
    if (ties.length >= ORDER_HEAD) return { order: ties.slice(0, ORDER_HEAD), fullOrder };
    return { order: [...ties, ...smallestAbove(restPred, limit, ORDER_HEAD - ties.length, byPred)], fullOrder };
  }

  /** The whole order: by prediction (stable), then the near-ties of the best re-ordered. */
  private wholeOrder(state: CycleState, candidates: readonly Candidate[], pred: Float64Array): number[] {
    const n = candidates.length;
    const order = new Array<number>(n);
    for (let i = 0; i < n; i++) order[i] = i;
    if (n > 32) order.sort((a, b) => pred[a]! - pred[b]!);
    else sortRange(order, 0, n, (a, b) => pred[a]! - pred[b]!);
    if (n < 2) return order;
    const best = pred[order[0]!]!;
    const limit = best + Math.max(this.opts.tieMs, this.opts.tieFraction * best);
    let ties = 1;
    while (ties < n && pred[order[ties]!]! <= limit) ties++;
    if (ties > 1) this.breakTies(state, candidates, order, ties);
    return order;
  }

  /** Orders `order[0, ties)` by fewest recent placements, then a seeded random key drawn per entry in its current order. */
  private breakTies(state: CycleState, candidates: readonly Candidate[], order: number[], ties: number): void {
    const n = candidates.length;
    if (this.count.length < n) {
      this.count = new Float64Array(2 * n);
      this.key = new Float64Array(2 * n);
    }
    const count = this.count;
    const key = this.key;
    for (let k = 0; k < ties; k++) {
      const i = order[k]!;
      count[i] = this.recent.valueAt(candidates[i]!.endpoint.id, state.nowMs);
      key[i] = state.rng.next();
    }
    const cmp = (a: number, b: number): number => count[a]! - count[b]! || key[a]! - key[b]!;
    if (ties > 32 && ties === order.length) order.sort(cmp);
    else sortRange(order, 0, ties, cmp);
  }
}

/** Above this many candidates the pick builds only the order's head (nearTieOrder). */
const HEAD_ONLY_ABOVE = 32;

/** A pick's order: its head, and the whole order on demand when the head is not all of it. */
interface Ranking {
  readonly order: number[];
  readonly fullOrder?: () => readonly number[];
}

/** The positions whose value is above `limit` (not ≤ it), in index order. */
function above(values: Float64Array, limit: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) if (!(values[i]! <= limit)) out.push(i);
  return out;
}

/**
 * The `m` first by `cmp` (a strict order) of the positions whose value is above `limit`
 * (`above`'s, read in place), in order: one pass with a bounded insertion list.
 */
function smallestAbove(values: Float64Array, limit: number, m: number, cmp: (a: number, b: number) => number): number[] {
  const head: number[] = [];
  if (m <= 0) return head;
  for (let x = 0; x < values.length; x++) {
    if (values[x]! <= limit) continue;
    let j = head.length;
    if (j === m) {
      if (cmp(head[j - 1]!, x) <= 0) continue;
      j--;
    } else {
      head.push(x);
    }
    while (j > 0 && cmp(head[j - 1]!, x) > 0) {
      head[j] = head[j - 1]!;
      j--;
    }
    head[j] = x;
  }
  return head;
}

export const predictedTtft = definePlugin({
  type: PREDICTED_TTFT,
  description:
    "Scorer and picker on the ttft-model plugin's predicted time to first token: the smallest prediction wins, near-ties go to the engine with the fewest recent placements; with a TTFT objective header the engine meeting it with the least headroom, and a sheddable request no engine can serve in time gets 429.",
  parameters: section({
    model: str({ nonEmpty: true }).default(TTFT_MODEL_PLUGIN).describe('Name of the ttft-model instance (listed before this one).'),
    sloHeader: str({ nonEmpty: true }).default('x-slo-ttft-ms').describe('Request header carrying the TTFT objective in milliseconds.'),
    prefillPenalty: num({ min: 0, max: 100 })
      .default(0)
      .describe(
        "Weight of the request's own uncached prefill time added to its predicted TTFT when picking (the delay it puts on requests queued behind it).",
      ),
    reuseWeight: num({ min: 0, max: 1000 })
      .default(2)
      .describe(
        'Future reuse: weight of the prefill time of the prompt part that one other engine alone holds (a session history), charged to every engine that would recompute it.',
      ),
    evictionWeight: num({ min: 0, max: 1000 })
      .default(1)
      .describe(
        "Future reuse: weight of the prompt's prefill time × the chance the engine's KV cache evicts it before the group's next request (kvUsage^evictionPower).",
      ),
    evictionPower: num({ min: 0, max: 100 }).default(2).describe('Exponent of kvUsage in the eviction chance.'),
    reuseKvUsage: num({ min: 0, max: 1 })
      .default(0.5)
      .describe(
        "Future reuse: the reuseWeight charge is scaled by the fleet's mean KV usage ÷ this, up to 1 (a fleet with its KV mostly free loses little by a second copy); 0: never scaled.",
      ),
    reuseQueueWeight: num({ min: 0, max: 1000 })
      .default(6)
      .describe(
        'Future reuse: weight of the lost-reuse prefill time per request already queued on the engine that would recompute it (a queue there means the fleet is short of prefill, and the recomputed history delays the requests behind it).',
      ),
    ...staleAfterParam,
    tieMs: num({ min: 0, max: 600_000 }).default(5).describe('Predictions within this many ms of the best are near-ties...'),
    tieFraction: num({ min: 0, max: 10 }).default(0.05).describe('...or within this fraction of the best, whichever is larger.'),
    spreadHalfLifeMs: int({ min: 1, max: 86_400_000 })
      .default(10_000)
      .describe('Half-life of the recent-placement counts that break near-ties.'),
    minRetryAfterMs: int({ min: 1, max: 3_600_000 }).default(1000).describe('Smallest Retry-After sent with a shed request.'),
  }),
  create: (name, p, handle) =>
    new PredictedTtftPlugin(name, ttftModelPlugin(handle, p.model, `predicted-ttft "${name}"`), {
      sloHeader: p.sloHeader,
      prefillPenalty: p.prefillPenalty,
      reuseWeight: p.reuseWeight,
      evictionWeight: p.evictionWeight,
      evictionPower: p.evictionPower,
      reuseKvUsage: p.reuseKvUsage,
      reuseQueueWeight: p.reuseQueueWeight,
      maxMetricsAgeMs: staleAfter(p, handle),
      tieMs: p.tieMs,
      tieFraction: p.tieFraction,
      spreadHalfLifeMs: p.spreadHalfLifeMs,
      minRetryAfterMs: p.minRetryAfterMs,
    }),
});
