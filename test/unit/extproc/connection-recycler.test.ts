import { expect } from 'chai';
import { ResetBudget } from '../../../src/extproc/connection-recycler.js';
import { ManualClock } from '../../../src/util/clock.js';

describe('extproc/connection-recycler: ResetBudget', () => {
  it('starts with the burst and spends one token per reset', () => {
    const clock = new ManualClock(0);
    const b = new ResetBudget(() => clock.nowMs(), 10, 2);
    expect(b.remaining()).to.equal(10);
    for (let i = 0; i < 4; i++) b.consume();
    expect(b.remaining()).to.equal(6);
  });

  it('refills in whole seconds at the rate, never above the burst', () => {
    const clock = new ManualClock(500);
    const b = new ResetBudget(() => clock.nowMs(), 10, 2);
    for (let i = 0; i < 8; i++) b.consume();
    clock.advance(400); // still within the same second (900 ms)
    expect(b.remaining()).to.equal(2);
    clock.advance(200); // crosses into second 1
    expect(b.remaining()).to.equal(4);
    clock.advance(3000);
    expect(b.remaining()).to.equal(10);
  });

  it('goes negative when spent faster than it refills (the point where Node would GOAWAY)', () => {
    const clock = new ManualClock(0);
    const b = new ResetBudget(() => clock.nowMs());
    let left = 0;
    for (let i = 0; i < 1001; i++) left = b.consume();
    expect(left).to.equal(-1);
  });
});
