import { expect } from 'chai';
import { pairedDifference } from '../../../../bench/stats/paired.js';

describe('bench/stats/paired', () => {
  it('takes the median of per-pass differences, not the difference of medians', () => {
    // A drifting machine: each pass is slower than the last, B is always 2 ms behind A.
    const a = [10, 20, 30, 40, 50, 60, 70];
    const b = [12, 22, 32, 42, 52, 62, 72];
    const p = pairedDifference(a, b);
    expect(p.n).to.equal(7);
    expect(p.medianDiffMs).to.equal(2);
    expect(p.interval90Ms).to.deep.equal([2, 2]);
  });

  it('skips passes where either side failed and reports nothing when no pass has both', () => {
    const p = pairedDifference([10, null, 30, 40], [11, 25, null, 43]);
    expect(p.n).to.equal(2);
    expect(p.medianDiffMs).to.equal(2);
    expect(pairedDifference([null, 1], [2, null])).to.deep.equal({ n: 0, medianDiffMs: null, interval90Ms: null });
  });

  it('gives an interval that holds the median, is seeded, and widens with spread', () => {
    const a = Array.from({ length: 41 }, (_, i) => 100 + (i % 5));
    const tight = a.map((x, i) => x + 3 + ((i % 3) - 1) * 0.5);
    const loose = a.map((x, i) => x + 3 + ((i * 7) % 11) - 5);
    const t = pairedDifference(a, tight, 500, 7);
    const l = pairedDifference(a, loose, 500, 7);
    expect(pairedDifference(a, loose, 500, 7)).to.deep.equal(l);
    for (const p of [t, l]) {
      const [lo, hi] = p.interval90Ms as readonly [number, number];
      expect(lo).to.be.at.most(p.medianDiffMs as number);
      expect(hi).to.be.at.least(p.medianDiffMs as number);
    }
    const width = (p: typeof t): number =>
      (p.interval90Ms as readonly [number, number])[1] - (p.interval90Ms as readonly [number, number])[0];
    expect(width(l)).to.be.greaterThan(width(t));
  });

  it('refuses samples of unequal passes', () => {
    expect(() => pairedDifference([1, 2], [1])).to.throw(/equal passes/);
  });
});
