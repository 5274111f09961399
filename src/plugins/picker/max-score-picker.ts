/**
 * Max-score picker: orders candidates by weighted total, best first; exact ties are broken
 * by the cycle's seeded Rng, so equally good endpoints share the traffic instead of the
 * first one taking it all (the "always index 0" collapse seen in other routers).
 *
 * Reason: `spill` when the hotspot filter replicated the prefix onto this engine; else from
 * the cycle's affinity evidence when an affinity scorer ran (affinity, load, cold or
 * imbalance — see affinity-reason.ts); otherwise the filters' hint, otherwise the
 * configured default (`load`).
 *
 * Cold requests (`coldOrder: prefill-queue`): when the affinity evidence shows that no
 * candidate holds any block of the request (and it has no session key), the weighted scores
 * carry no cache information and only load decides; the candidates are then ordered by their
 * prefill queue (requests
 * not past their first byte, raised to the engine's fresh waiting count; seeded random among
 * equals). Why: a cold request pays a full prefill wherever it goes, so its time to first
 * token is the prefill queue ahead of it. The queue and KV-usage scores count decoding
 * requests too (KV usage is in-flight tokens by another name) and behave like least-request,
 * which measured p50 1.4–1.7× and p99 ~3× round-robin's TTFT with no prefix sharing
 * (bench/results/load-cold).
 *
 * Cold spread (`coldSpread`, on by default with prefill-queue): equal prefill queues are
 * broken by the fewest recent cold placements (counts decayed with a 60 s half-life) before
 * the random tie-break. Why: a cold request starts a prefix group that its followers join
 * by affinity, so where cold requests land is where groups live. On an idle fleet every
 * queue is 0 and a random pick put three of four system prompts, and so three quarters of a
 * chat workload, on one engine (bench/results/multi-turn); counting recent cold picks
 * spreads new groups like a round robin while the prefill queue still decides under load.
 */
import { DECISION_REASONS, type DecisionReason, type Endpoint } from '../../core/types.js';
import { prefillQueue } from '../../endpoints/load.js';
import { affinityReason } from '../../scheduling/affinity-reason.js';
import { AFFINITY_EVIDENCE, getScratch } from '../../scheduling/cycle-scratch.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { Candidate, CycleState, EndpointsChangedHook, Picker, PickResult } from '../../scheduling/types.js';
import { params } from '../plugin-params.js';
import { DecayedCounts } from '../shared/decayed-counts.js';

export const MAX_SCORE_PICKER = 'max-score-picker';

export const COLD_ORDERS = ['scores', 'prefill-queue'] as const;
export type ColdOrder = (typeof COLD_ORDERS)[number];

/** Half-life of the recent-cold-placement counts (cold spread). */
export const COLD_SPREAD_HALF_LIFE_MS = 60_000;

export class MaxScorePicker implements Picker, EndpointsChangedHook {
  /** Recent cold placements per endpoint id (cold spread). */
  private readonly coldPicks = new DecayedCounts(COLD_SPREAD_HALF_LIFE_MS);

  constructor(
    readonly name: string,
    private readonly defaultReason: DecisionReason,
    private readonly coldOrder: ColdOrder = 'scores',
    private readonly staleAfterMs = 1000,
    private readonly coldSpread = false,
  ) {}

  /** A departed engine's recent cold placements go with it. */
  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.coldPicks.retain(new Set(endpoints.map((e) => e.id)));
  }

  pick(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult {
    let order: number[];
    if (this.coldOrder === 'prefill-queue' && isCold(state, candidates)) {
      const q = new Array<number>(candidates.length);
      for (let i = 0; i < candidates.length; i++) {
        // The spread term is in [0, 1) against the queue × 1024: it only breaks ties (engine
        // waiting counts can be fractional once faded by age, so not just whole requests).
        const recent = this.coldSpread ? this.coldPicks.valueAt(candidates[i]!.endpoint.id, state.nowMs) : 0;
        q[i] = -prefillQueue(candidates[i]!.load, this.staleAfterMs) * 1024 - recent / (1 + recent);
      }
      order = orderByDescending(state, q);
      if (this.coldSpread) this.coldPicks.add(candidates[order[0]!]!.endpoint.id, state.nowMs);
    } else {
      order = orderByDescending(state, totals);
    }
    // A hotspot spill narrows the candidates to the one engine it chose: its label is certain.
    const reason =
      state.reasonHint === 'spill' ? 'spill' : (affinityReason(state, candidates, order[0]!) ?? state.reasonHint ?? this.defaultReason);
    return { order, reason };
  }
}

/**
 * True when an affinity scorer ran, no candidate holds any block of the request, and the
 * request has no session key (a session binding is information the scores carry).
 */
function isCold(state: CycleState, candidates: readonly Candidate[]): boolean {
  if (state.request.sessionKey !== undefined) return false;
  const ev = getScratch(state, AFFINITY_EVIDENCE);
  if (ev === undefined) return false;
  for (const c of candidates) if ((ev.matchedByEndpoint[c.endpoint.index] ?? 0) > 0) return false;
  return true;
}

/** Candidate indices by value, highest first; exact ties in seeded random order. */
function orderByDescending(state: CycleState, totals: ArrayLike<number>): number[] {
  const n = totals.length;
  const order = new Array<number>(n);
  const tie = new Array<number>(n);
  // Insertion sort by (total desc, random key asc): n is small (endpoints in a pool) and
  // this avoids Array.prototype.sort's comparator-call overhead on the hot path.
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
 * Params: `reason` (default load), `coldOrder` (scores | prefill-queue, default scores),
 * `coldSpread` (default false here; cache-aware passes `cacheAware.coldSpread`).
 */
export const maxScorePickerFactory: PluginFactory = (name, p, ctx) => {
  const r = params(name, p).only('reason', 'coldOrder', 'coldSpread');
  return new MaxScorePicker(
    name,
    r.oneOf<DecisionReason>('reason', 'load', DECISION_REASONS),
    r.oneOf<ColdOrder>('coldOrder', 'scores', COLD_ORDERS),
    ctx.config.engineMetrics.staleAfterMs,
    r.boolean('coldSpread', false),
  );
};
