import { expect } from 'chai';
import { RoundRobinPicker } from '../../../../src/plugins/picker/round-robin-picker.js';
import { candidates, cycle } from '../../builders.js';

describe('RoundRobinPicker', () => {
  it('rotates the start and lists the rest in rotation as fallbacks', () => {
    const p = new RoundRobinPicker('rr');
    const cs = candidates(3);
    const orders = Array.from({ length: 4 }, () => p.pick(cycle(), cs).order);
    expect(orders).to.deep.equal([
      [0, 1, 2],
      [1, 2, 0],
      [2, 0, 1],
      [0, 1, 2],
    ]);
    expect(p.pick(cycle(), cs).reason).to.equal('round-robin');
  });

  it('gives each endpoint exactly every n-th request', () => {
    const p = new RoundRobinPicker('rr');
    const counts = [0, 0, 0, 0, 0];
    for (let i = 0; i < 500; i++) counts[p.pick(cycle(), candidates(5)).order[0]!]!++;
    expect(counts).to.deep.equal([100, 100, 100, 100, 100]);
  });
});
