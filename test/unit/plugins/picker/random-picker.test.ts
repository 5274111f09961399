import { expect } from 'chai';
import { RandomPicker } from '../../../../src/plugins/picker/random-picker.js';
import { seededRng } from '../../../../src/util/rng.js';
import { candidates, cycle } from '../../builders.js';

describe('RandomPicker', () => {
  it('returns a permutation, spread roughly uniformly, reproducible from the seed', () => {
    const p = new RandomPicker('rand');
    const run = (seed: number): number[] => {
      const rng = seededRng(seed);
      const counts = [0, 0, 0, 0];
      for (let i = 0; i < 4000; i++) {
        const { order, reason } = p.pick(cycle({}, rng), candidates(4));
        expect([...order].sort()).to.deep.equal([0, 1, 2, 3]);
        expect(reason).to.equal('random');
        counts[order[0]!]!++;
      }
      return counts;
    };
    const a = run(11);
    for (const c of a) expect(c).to.be.within(850, 1150);
    expect(run(11)).to.deep.equal(a);
  });
});
