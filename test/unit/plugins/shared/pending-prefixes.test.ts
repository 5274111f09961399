import { expect } from 'chai';
import type { BlockHashes } from '../../../../src/prefix-cache/block-hasher.js';
import { PendingPrefixes } from '../../../../src/plugins/shared/pending-prefixes.js';
import type { LaneEntry } from '../../../../src/plugins/shared/prefill-lanes.js';

/** A chain of `n` blocks whose keys are `base + i` (distinct chains: distinct bases). */
function chain(base: number, n: number): BlockHashes {
  const lo = Int32Array.from({ length: n }, (_, i) => base + i);
  const hi = Int32Array.from({ length: n }, () => base);
  return { count: n, lo, hi };
}

const lane = (): LaneEntry => ({ end: 0, prefilled: false, finished: false });

describe('PendingPrefixes', () => {
  it("says from which block a match reaches into another request's unfinished prefill", () => {
    const p = new PendingPrefixes();
    const h = chain(1000, 10);
    const first = lane();
    p.add('e1', h, 4, 10, first); // blocks 0-3 were there, 4-9 in flight
    expect(p.pendingFrom('e1', h, 10)).to.equal(4);
    expect(p.pendingFrom('e1', h, 6)).to.equal(4);
    expect(p.pendingFrom('e1', h, 4), 'a match ending before the new blocks is computed').to.equal(-1);
    expect(p.pendingFrom('e2', h, 10), 'another engine').to.equal(-1);
    expect(p.pendingFrom('e1', chain(5000, 10), 10), 'another chain').to.equal(-1);
    first.prefilled = true;
    expect(p.pendingFrom('e1', h, 10), 'prefilled: hits').to.equal(-1);
  });

  it('forgets records once their prefill is over, in routing order, and engines not kept', () => {
    const p = new PendingPrefixes();
    const a = lane();
    const b = lane();
    p.add('e1', chain(1, 5), 0, 5, a);
    p.add('e1', chain(100, 5), 0, 5, b);
    expect(p.size('e1')).to.equal(2);
    a.finished = true;
    p.add('e1', chain(200, 5), 5, 5, lane()); // brings nothing, prunes the front
    expect(p.size('e1')).to.equal(1);
    expect(p.pendingFrom('e1', chain(100, 5), 5)).to.equal(0);
    p.retain(new Set(['e2']));
    expect(p.size('e1')).to.equal(0);
    expect(p.pendingFrom('e1', chain(100, 5), 5)).to.equal(-1);
  });
});
