/** HalfLifeFrame: the split decay factors equal the direct one, and the reference moves before they overflow. */
import { expect } from 'chai';
import { HalfLifeFrame } from '../../../src/util/half-life-frame.js';

describe('util: half-life frame', () => {
  it('fromRef(at) × nowFactor(now) is 2^(−(now − at)/H)', () => {
    const f = new HalfLifeFrame(1000);
    const toNow = f.nowFactor(5_000);
    for (const at of [0, 1_234, 4_999, 5_000]) {
      expect(f.fromRef(at) * toNow).to.be.closeTo(2 ** (-(5_000 - at) / 1000), 1e-12);
    }
  });

  it('keeps its reference for reads within 60 half-lives and moves it to the read time beyond', () => {
    const f = new HalfLifeFrame(1000);
    f.nowFactor(0);
    expect(f.ref).to.equal(0);
    f.nowFactor(59_000);
    expect(f.ref, 'still within the span').to.equal(0);
    const toNow = f.nowFactor(10_000_000);
    expect(f.ref, 'moved to the far read').to.equal(10_000_000);
    expect(toNow).to.equal(1);
    expect(f.fromRef(9_999_000) * toNow).to.be.closeTo(0.5, 1e-12);
  });
});
