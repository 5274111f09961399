import { expect } from 'chai';
import { MaxScorePicker, orderByDescending, rankByDescending } from '../../../../src/plugins/picker/max-score-picker.js';
import { ORDER_HEAD } from '../../../../src/framework/types.js';
import { setScratch } from '../../../../src/framework/cycle-scratch.js';
import { AFFINITY_EVIDENCE } from '../../../../src/plugins/shared/cycle-keys.js';
import { seededRng } from '../../../../src/util/rng.js';
import { candidates, cycle } from '../../builders.js';

/**
 * `n` totals with few distinct values (so exact ties are common) and the order the rule gives
 * them (total desc, then the tie key the cycle's Rng seeded `keySeed` draws per candidate).
 */
function tiedTotals(n: number, seed: number, levels: number, keySeed: number) {
  const gen = seededRng(seed);
  const totals = Array.from({ length: n }, () => gen.int(levels) / (levels - 1));
  const keysRng = seededRng(keySeed);
  const keys = totals.map(() => keysRng.next());
  const expected = totals.map((_, i) => i).sort((a, b) => totals[b]! - totals[a]! || keys[a]! - keys[b]!);
  return { totals, expected, keysRng };
}

describe('MaxScorePicker', () => {
  const p = new MaxScorePicker('max', 'load');

  it('orders by total, best first', () => {
    expect(p.pick(cycle(), candidates(4), [0.5, 3, 1, 2]).order).to.deep.equal([1, 3, 2, 0]);
  });

  it('breaks exact ties at random (seeded), not always towards the first', () => {
    const firsts = new Set<number>();
    const rng = seededRng(5);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 400; i++) {
      const first = p.pick(cycle({}, rng), candidates(4), [1, 1, 1, 1]).order[0]!;
      firsts.add(first);
      counts[first]!++;
    }
    expect(firsts.size).to.equal(4);
    for (const c of counts) expect(c).to.be.within(60, 140);
    // Ties only among the best: a strictly worse candidate is never first.
    for (let i = 0; i < 50; i++) expect(p.pick(cycle({}, rng), candidates(3), [2, 2, 1]).order[2]).to.equal(2);
  });

  it('orders a fleet-sized pool (sorted, not inserted) exactly as the rule says: total desc, then the seeded tie key', () => {
    for (const n of [17, 64, 300, 1024]) {
      for (let trial = 0; trial < 20; trial++) {
        const { totals, expected } = tiedTotals(n, 1000 * n + trial, 5, trial);
        expect(orderByDescending(cycle({}, seededRng(trial)), totals)).to.deep.equal(expected);
      }
    }
  });

  it('on a fleet returns the head of that order, the whole order on demand, and draws one tie key per candidate either way', () => {
    for (const n of [16, 17, 18, 64, 1024]) {
      for (let trial = 0; trial < 10; trial++) {
        const { totals, expected, keysRng } = tiedTotals(n, 77 * n + trial, 4, trial);
        const rng = seededRng(trial);
        const r = rankByDescending(cycle({}, rng), totals);
        // The Rng is left where n draws leave it.
        expect(rng.next()).to.equal(keysRng.next());
        expect(r.order).to.deep.equal(expected.slice(0, ORDER_HEAD));
        // Another ranking in between (the keys are drawn again on demand, not kept): same whole order, twice.
        rankByDescending(
          cycle({}, rng),
          totals.map((t) => 1 - t),
        );
        if (n > ORDER_HEAD) {
          expect(r.fullOrder?.()).to.deep.equal(expected);
          expect(r.fullOrder?.()).to.deep.equal(expected);
        } else expect(r.fullOrder).to.equal(undefined);
      }
    }
  });

  it('sorts the whole order at once when a total is NaN (it has no place in the head)', () => {
    const totals = Array.from({ length: 40 }, (_, i) => (i === 5 ? Number.NaN : i % 3));
    const r = rankByDescending(cycle({}, seededRng(2)), totals);
    expect(r.fullOrder).to.equal(undefined);
    expect(r.order).to.have.length(40);
    expect(r.order).to.deep.equal(orderByDescending(cycle({}, seededRng(2)), totals));
  });

  it('is reproducible from the seed', () => {
    const run = (seed: number): number[] => {
      const rng = seededRng(seed);
      return Array.from({ length: 20 }, () => p.pick(cycle({}, rng), candidates(5), [1, 1, 1, 1, 1]).order[0]!);
    };
    expect(run(3)).to.deep.equal(run(3));
    expect(run(3)).to.not.deep.equal(run(4));
  });

  it('labels with the default, the hint, or the affinity evidence', () => {
    expect(p.pick(cycle(), candidates(2), [1, 0]).reason).to.equal('load');
    const hinted = cycle();
    hinted.reasonHint = 'session';
    expect(p.pick(hinted, candidates(2), [1, 0]).reason).to.equal('session');
    const ev = cycle();
    setScratch(ev, AFFINITY_EVIDENCE, { matchedByEndpoint: [0, 4], totalBlocks: 4 });
    expect(p.pick(ev, candidates(2), [0, 1]).reason).to.equal('affinity');
    // A hotspot spill hint wins over the evidence: the filter already chose the engine.
    const spill = cycle();
    setScratch(spill, AFFINITY_EVIDENCE, { matchedByEndpoint: [0, 4], totalBlocks: 4 });
    spill.reasonHint = 'spill';
    expect(p.pick(spill, candidates(2), [0, 1]).reason).to.equal('spill');
  });
});
