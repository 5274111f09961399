/** DecayedCounts: halving per half-life, accumulation, forgetting keys. */
import { expect } from 'chai';
import { DecayedCounts } from '../../../../src/plugins/shared/decayed-counts.js';

describe('plugins/shared: decayed counts', () => {
  it('halves a count every half-life and adds new events on top of the decayed value', () => {
    const c = new DecayedCounts(1000);
    expect(c.valueAt('a', 0)).to.equal(0);
    c.add('a', 0);
    c.add('a', 0);
    expect(c.valueAt('a', 0)).to.equal(2);
    expect(c.valueAt('a', 1000)).to.be.closeTo(1, 1e-12);
    expect(c.valueAt('a', 3000)).to.be.closeTo(0.25, 1e-12);
    c.add('a', 1000);
    expect(c.valueAt('a', 1000)).to.be.closeTo(2, 1e-12);
    expect(c.valueAt('a', 500), 'a read before the last update is not grown back').to.be.closeTo(2, 1e-12);
  });

  it('forgets keys outside the kept set, and refuses a non-positive half-life', () => {
    const c = new DecayedCounts(1000);
    c.add('a', 0);
    c.add('b', 0);
    c.retain(new Set(['b']));
    expect(c.valueAt('a', 0)).to.equal(0);
    expect(c.valueAt('b', 0)).to.equal(1);
    expect(() => new DecayedCounts(0)).to.throw(RangeError);
  });
});
