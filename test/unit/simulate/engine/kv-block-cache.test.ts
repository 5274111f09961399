import { expect } from 'chai';
import { KvBlockCache } from '../../../../src/simulate/engine/kv-block-cache.js';

describe('sim-engine KvBlockCache', () => {
  it('counts a hit only for resident, computed, leading blocks', () => {
    const c = new KvBlockCache(10);
    const a = c.allocate([1, 2, 3], 0)!;
    expect(c.matchPrefix([1, 2, 3])).to.equal(0); // not computed yet
    c.markComputed(a, 2);
    expect(c.matchPrefix([1, 2, 3])).to.equal(2);
    expect(c.matchPrefix([1, 2, 3], 1)).to.equal(1);
    expect(c.matchPrefix([9, 2, 3])).to.equal(0); // must be leading
    c.release(a);
    expect(c.matchPrefix([1, 2, 3])).to.equal(2); // computed blocks stay cached
    expect(c.has(3)).to.equal(false); // the uncomputed one is dropped
    expect(c.usedBlocks).to.equal(0);
    expect(c.freeCachedBlocks).to.equal(2);
  });

  it('evicts least recently used free blocks first, a request tail before its head', () => {
    const c = new KvBlockCache(6);
    const a = c.allocate([11, 12, 13], 0)!;
    c.markComputed(a, 3);
    c.release(a);
    const b = c.allocate([21, 22, 23], 0)!;
    c.markComputed(b, 3);
    c.release(b);
    expect(c.evictionOrder()).to.deep.equal([13, 12, 11, 23, 22, 21]);
    // Touch a's head: a hit moves it out of the free queue, release puts it back as newest.
    const hit = c.allocate([11], 0)!;
    c.release(hit);
    expect(c.evictionOrder()).to.deep.equal([13, 12, 23, 22, 21, 11]);
    // Two new blocks must evict two: 13 then 12.
    const d = c.allocate([31, 32], 0)!;
    expect(c.has(13)).to.equal(false);
    expect(c.has(12)).to.equal(false);
    expect(c.has(11)).to.equal(true);
    expect(c.has(23)).to.equal(true);
    expect(c.evictions).to.equal(2);
    c.release(d);
  });

  it('refuses allocations that do not fit, without side effects', () => {
    const c = new KvBlockCache(4);
    const a = c.allocate([1, 2], 1)!;
    expect(c.usedBlocks).to.equal(3);
    expect(c.allocate([5, 6], 0)).to.equal(null);
    expect(c.usedBlocks).to.equal(3);
    expect(c.grow(a, 2)).to.equal(false);
    expect(c.grow(a, 1)).to.equal(true);
    expect(c.usage).to.equal(1);
    c.release(a);
    expect(c.usedBlocks).to.equal(0);
    expect(c.usage).to.equal(0);
  });

  it('shares referenced blocks between requests and keeps them until the last release', () => {
    const c = new KvBlockCache(8);
    const a = c.allocate([1, 2], 0)!;
    c.markComputed(a, 2);
    const b = c.allocate([1, 2, 3], 0)!;
    expect(c.usedBlocks).to.equal(3);
    c.release(a);
    expect(c.usedBlocks).to.equal(3);
    expect(c.freeCachedBlocks).to.equal(0);
    c.release(b);
    expect(c.freeCachedBlocks).to.equal(2);
    c.release(b); // idempotent
    expect(c.usedBlocks).to.equal(0);
  });

  it('resize and clear evict only unreferenced blocks', () => {
    const c = new KvBlockCache(8);
    const a = c.allocate([1, 2, 3, 4], 0)!;
    c.markComputed(a, 4);
    c.release(a);
    const held = c.allocate([7, 8], 0)!;
    c.markComputed(held, 2);
    c.resize(4);
    expect(c.freeCachedBlocks).to.equal(2);
    expect(c.has(7)).to.equal(true);
    c.clear();
    expect(c.freeCachedBlocks).to.equal(0);
    expect(c.has(7)).to.equal(false);
    expect(c.usedBlocks).to.equal(2); // still held
    const fresh = c.allocate([7], 0)!; // a new block with the same key
    expect(c.usedBlocks).to.equal(3);
    c.release(held);
    c.release(fresh);
    expect(c.usedBlocks).to.equal(0);
    expect(c.allocate([1, 2, 3, 4], 0)).to.not.equal(null);
  });
});
