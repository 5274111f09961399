/**
 * Max-score picker: orders candidates by weighted total, best first; exact ties are broken
 * by the cycle's seeded Rng, so equally good endpoints share the traffic instead of the
 * first one taking it all (the "always index 0" collapse seen in other routers).
 *
 * Reason: `spill` when the hotspot filter replicated the prefix onto this engine; else from
 * the cycle's affinity evidence when an affinity scorer ran (affinity, load, cold or
 * imbalance — see affinity-reason.ts); otherwise the filters' hint, otherwise the
 * configured default (`load`).
 */
import { DECISION_REASONS, type DecisionReason } from '../../core/types.js';
import { affinityReason } from '../../scheduling/affinity-reason.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../scheduling/types.js';
import { params } from '../plugin-params.js';

export const MAX_SCORE_PICKER = 'max-score-picker';

export class MaxScorePicker implements Picker {
  constructor(
    readonly name: string,
    private readonly defaultReason: DecisionReason,
  ) {}

  pick(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult {
    const n = candidates.length;
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
    // A hotspot spill narrows the candidates to the one engine it chose: its label is certain.
    const reason =
      state.reasonHint === 'spill' ? 'spill' : (affinityReason(state, candidates, order[0]!) ?? state.reasonHint ?? this.defaultReason);
    return { order, reason };
  }
}

export const maxScorePickerFactory: PluginFactory = (name, p) => {
  const r = params(name, p).only('reason');
  return new MaxScorePicker(name, r.oneOf<DecisionReason>('reason', 'load', DECISION_REASONS));
};
