import { expect } from 'chai';
import { CONDITIONS, passOrder } from '../../../../bench/profile/engine-side-costs.js';

describe('bench/profile/engine-side-costs', () => {
  it('runs every condition once a pass and rotates which one goes first', () => {
    const firsts = new Set<string>();
    for (let i = 0; i < CONDITIONS.length * 2; i++) {
      const order = passOrder(i);
      expect([...order].sort()).to.deep.equal([...CONDITIONS].sort());
      firsts.add(order[0] as string);
    }
    expect(firsts.size).to.equal(CONDITIONS.length);
    expect(passOrder(0)[0]).to.equal('plain');
  });
});
