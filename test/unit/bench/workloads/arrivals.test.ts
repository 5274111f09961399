import { expect } from 'chai';
import { seededRng } from '../../../../src/util/rng.js';
import { arrivalTimes } from '../../../../bench/workloads/arrivals.js';

describe('bench/workloads/arrivals', () => {
  it('constant spacing is exact', () => {
    expect(arrivalTimes({ kind: 'constant', qps: 4 }, 4, seededRng(1))).to.deep.equal([0, 250, 500, 750]);
  });

  it('Poisson gaps average 1/qps and are reproducible', () => {
    const a = arrivalTimes({ kind: 'poisson', qps: 10 }, 20001, seededRng(42));
    expect(a).to.deep.equal(arrivalTimes({ kind: 'poisson', qps: 10 }, 20001, seededRng(42)));
    const meanGap = (a[20000] as number) / 20000;
    expect(meanGap).to.be.closeTo(100, 3);
    for (let i = 1; i < a.length; i++) expect(a[i] as number).to.be.at.least(a[i - 1] as number);
  });

  it('rejects a non-positive rate', () => {
    expect(() => arrivalTimes({ kind: 'poisson', qps: 0 }, 1, seededRng(1))).to.throw(RangeError);
  });
});
