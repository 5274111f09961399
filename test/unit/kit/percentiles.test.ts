import { expect } from 'chai';
import fc from 'fast-check';
import { distribution, median, quantileSorted } from '../../kit/percentiles.js';

describe('test/kit/percentiles', () => {
  it('interpolates between closest ranks (type 7)', () => {
    expect(quantileSorted([1, 2, 3, 4], 0.5)).to.equal(2.5);
    expect(quantileSorted([10, 20, 30, 40, 50], 0.9)).to.be.closeTo(46, 1e-9);
    expect(quantileSorted([10, 20, 30, 40, 50], 0)).to.equal(10);
    expect(quantileSorted([10, 20, 30, 40, 50], 1)).to.equal(50);
    expect(quantileSorted([7], 0.99)).to.equal(7);
  });

  it('p99 of 1..100 is 99.01', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantileSorted(xs, 0.99)).to.be.closeTo(99.01, 1e-9);
  });

  it('empty input has no percentiles (null, not 0)', () => {
    const d = distribution([]);
    expect(d.count).to.equal(0);
    expect(d.p50).to.equal(null);
    expect(d.mean).to.equal(null);
    expect(quantileSorted([], 0.5)).to.equal(null);
  });

  it('distribution sorts, ignores non-finite values and reports the mean and max', () => {
    const d = distribution([5, 1, Number.NaN, 3, Number.POSITIVE_INFINITY]);
    expect(d.count).to.equal(3);
    expect(d.mean).to.equal(3);
    expect(d.p50).to.equal(3);
    expect(d.max).to.equal(5);
  });

  it('rejects quantiles outside [0,1]', () => {
    expect(() => quantileSorted([1], 1.5)).to.throw(RangeError);
  });

  it('percentiles are monotone and bounded by min and max (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }), (xs) => {
        const d = distribution(xs);
        const min = Math.min(...xs);
        const max = Math.max(...xs);
        const [p50, p90, p99] = [d.p50 as number, d.p90 as number, d.p99 as number];
        return min <= p50 && p50 <= p90 && p90 <= p99 && p99 <= max;
      }),
    );
  });

  it('takes the median of unsorted values without reordering them; none gives null', () => {
    const values = [40, 10, 30, 20];
    expect(median(values)).to.equal(25);
    expect(values).to.deep.equal([40, 10, 30, 20]);
    expect(median([3, 1, 2])).to.equal(2);
    expect(median([])).to.equal(null);
  });
});
