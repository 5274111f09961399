/**
 * predicted-ttft's order on a fleet: the head it builds above 32 candidates (and the whole
 * order on demand) is the order its rule gives — ascending prediction, the near-ties of the
 * best by fewest recent placements then a seeded key drawn per near-tie in (prediction, index)
 * order — and the Rng is left where those draws leave it, at every pool size.
 */
import { expect } from 'chai';
import { ORDER_HEAD } from '../../../../src/framework/types.js';
import { PredictedTtftPlugin, type PredictedTtftOptions } from '../../../../src/plugins/multi/predicted-ttft.js';
import type { TtftModelPlugin } from '../../../../src/plugins/multi/ttft-model-plugin.js';
import { seededRng } from '../../../../src/util/rng.js';
import { candidates, cycle } from '../../builders.js';

const OPTS: PredictedTtftOptions = {
  sloHeader: 'x-slo-ttft-ms',
  prefillPenalty: 0,
  reuseWeight: 0,
  evictionWeight: 0,
  evictionPower: 2,
  reuseKvUsage: 0.25,
  reuseQueueWeight: 0,
  maxMetricsAgeMs: 1000,
  tieMs: 5,
  tieFraction: 0.05,
  spreadHalfLifeMs: 10_000,
  minRetryAfterMs: 1000,
};

/** A picker whose model predicts `pred` (no future-reuse terms: the cost is the prediction). */
function picker(pred: Float64Array): PredictedTtftPlugin {
  const model = { predictions: () => pred } as unknown as TtftModelPlugin;
  return new PredictedTtftPlugin('ttft', model, OPTS);
}

/** The rule's order for a first pick (no recent placements) and the keys it draws from `keys`. */
function expected(pred: Float64Array, keys: () => number): number[] {
  const byPred = [...pred.keys()].sort((a, b) => pred[a]! - pred[b]! || a - b);
  const best = pred[byPred[0]!]!;
  const limit = best + Math.max(OPTS.tieMs, OPTS.tieFraction * best);
  const ties = byPred.filter((i) => pred[i]! <= limit);
  const rest = byPred.filter((i) => pred[i]! > limit);
  if (ties.length === 1) return byPred;
  const key = new Map(ties.map((i) => [i, keys()]));
  return [...ties.sort((a, b) => key.get(a)! - key.get(b)!), ...rest];
}

describe('predicted-ttft order on a fleet', () => {
  it('the head (and the whole order on demand) follow the rule, with the same tie-key draws, at every size', () => {
    for (const n of [8, 32, 33, 64, 300, 1024]) {
      for (let trial = 0; trial < 8; trial++) {
        const gen = seededRng(31 * n + trial);
        // Few distinct levels: many near-ties (an idle fleet), or a spread with a few ties.
        const levels = trial % 2 === 0 ? 3 : 200;
        const pred = Float64Array.from({ length: n }, () => 100 + gen.int(levels) * 7);
        const ref = seededRng(trial);
        const want = expected(pred, () => ref.next());
        const rng = seededRng(trial);
        const r = picker(pred).pick(cycle({}, rng), candidates(n));
        expect(rng.next(), `Rng state, n=${n}`).to.equal(ref.next());
        if (n > 32) {
          expect(r.order, `head, n=${n}`).to.deep.equal(want.slice(0, ORDER_HEAD));
          expect(r.fullOrder?.(), `whole, n=${n}`).to.deep.equal(want);
        } else {
          expect(r.order, `n=${n}`).to.deep.equal(want);
          expect(r.fullOrder).to.equal(undefined);
        }
      }
    }
  });
});
