import { expect } from 'chai';
import { type BlockAllocation, KvBlockCache, type KvCacheListener } from '../../../../src/simulate/engine/kv-block-cache.js';
import { seededRng } from '../../../../src/util/rng.js';

/**
 * The pool as it was written first (a Map index, a Map as the LRU queue): the reference the
 * table-and-list pool must match operation for operation, results, counters, eviction order
 * and listener events alike.
 */
class MapPool {
  private readonly byHash = new Map<number, { hash: number; refs: number; computed: boolean; detached: boolean }>();
  private readonly free = new Map<number, { hash: number; refs: number; computed: boolean; detached: boolean }>();
  private referenced = 0;
  private detachedRefs = 0;
  private anon = 0;
  evictions = 0;
  constructor(
    private cap: number,
    private readonly events: string[],
  ) {}
  get usedBlocks(): number {
    return this.referenced + this.anon;
  }
  get freeCachedBlocks(): number {
    return this.free.size;
  }
  matchPrefix(hashes: readonly number[], max = hashes.length): number {
    let n = 0;
    while (n < Math.min(max, hashes.length) && this.byHash.get(hashes[n]!)?.computed === true) n++;
    return n;
  }
  allocate(hashes: readonly number[], anonBlocks: number): MapAlloc | null {
    let reuse = 0;
    let fresh = 0;
    for (const h of hashes) {
      const b = this.byHash.get(h);
      if (!b) fresh++;
      else if (b.refs === 0) reuse++;
    }
    if (this.usedBlocks + reuse + fresh + anonBlocks > this.cap) return null;
    const blocks: MapAlloc['blocks'] = [];
    for (const h of hashes) {
      let b = this.byHash.get(h);
      if (!b) {
        b = { hash: h, refs: 0, computed: false, detached: false };
        this.byHash.set(h, b);
      }
      if (b.refs === 0) {
        this.free.delete(h);
        this.referenced++;
      }
      b.refs++;
      blocks.push(b);
    }
    this.anon += anonBlocks;
    this.evictToFit();
    return { blocks, anon: anonBlocks, released: false };
  }
  grow(a: MapAlloc, n: number): boolean {
    if (a.released || this.usedBlocks + n > this.cap) return false;
    this.anon += n;
    a.anon += n;
    this.evictToFit();
    return true;
  }
  markComputed(a: MapAlloc, n: number): void {
    const lim = Math.min(n, a.blocks.length);
    let run = -1;
    for (let i = 0; i <= lim; i++) {
      const b = i < lim ? a.blocks[i]! : undefined;
      const fresh = b !== undefined && !b.computed && !b.detached;
      if (b !== undefined) b.computed = true;
      if (fresh && run < 0) run = i;
      if (!fresh && run >= 0) {
        this.events.push(`stored ${a.blocks[run]!.hash} ${run}..${i}`);
        run = -1;
      }
    }
  }
  release(a: MapAlloc): void {
    if (a.released) return;
    a.released = true;
    this.anon -= a.anon;
    for (let i = a.blocks.length - 1; i >= 0; i--) {
      const b = a.blocks[i]!;
      if (--b.refs > 0) continue;
      this.referenced--;
      if (b.detached) {
        this.detachedRefs--;
        continue;
      }
      if (b.computed) this.free.set(b.hash, b);
      else this.byHash.delete(b.hash);
    }
  }
  resize(cap: number): void {
    this.cap = cap;
    this.evictToFit();
  }
  clear(): void {
    this.events.push('cleared');
    for (const b of this.byHash.values()) {
      if (b.refs > 0) {
        b.detached = true;
        this.detachedRefs++;
      }
    }
    this.byHash.clear();
    this.free.clear();
  }
  evictionOrder(): number[] {
    return [...this.free.keys()];
  }
  private evictToFit(): void {
    let over = this.byHash.size + this.detachedRefs + this.anon - this.cap;
    for (const h of this.free.keys()) {
      if (over <= 0) break;
      this.free.delete(h);
      this.byHash.delete(h);
      this.evictions++;
      this.events.push(`removed ${h}`);
      over--;
    }
  }
}

interface MapAlloc {
  readonly blocks: { hash: number; refs: number; computed: boolean; detached: boolean }[];
  anon: number;
  released: boolean;
}

function recorder(events: string[]): KvCacheListener {
  return {
    stored: (a: BlockAllocation, from: number, to: number) => void events.push(`stored ${a.blocks[from]!.hash} ${from}..${to}`),
    removed: (h: number) => void events.push(`removed ${h}`),
    cleared: () => void events.push('cleared'),
  };
}

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

  it('matches the Map-based pool it replaced under random churn: results, counters, eviction order, events (property)', () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const rng = seededRng(seed);
      // 53-bit keys like the engine's (and, for one seed, small integers that share hash-table slots).
      const keyOf = (chain: number, i: number): number =>
        seed === 6 ? chain * 64 + i : 4294967296 * ((chain * 7919 + i * 104729) % 2097152) + ((chain * 2654435761 + i * 40503) >>> 0);
      const cap = 16 + rng.int(200);
      const gotEvents: string[] = [];
      const wantEvents: string[] = [];
      const got = new KvBlockCache(cap);
      got.listener = recorder(gotEvents);
      const want = new MapPool(cap, wantEvents);
      const held: [BlockAllocation, MapAlloc][] = [];
      for (let step = 0; step < 4000; step++) {
        const op = rng.next();
        if (op < 0.4) {
          const chain = rng.int(40);
          const hashes = Array.from({ length: 1 + rng.int(24) }, (_, i) => keyOf(chain, i));
          const anon = rng.int(3);
          expect(got.matchPrefix(hashes)).to.equal(want.matchPrefix(hashes));
          const g = got.allocate(hashes, anon);
          const w = want.allocate(hashes, anon);
          expect(g === null).to.equal(w === null);
          if (g !== null && w !== null) held.push([g, w]);
        } else if (op < 0.6 && held.length > 0) {
          const [g, w] = held[rng.int(held.length)]!;
          const n = rng.int(g.blocks.length + 1);
          got.markComputed(g, n);
          want.markComputed(w, n);
        } else if (op < 0.85 && held.length > 0) {
          const [g, w] = held.splice(rng.int(held.length), 1)[0]!;
          got.release(g);
          want.release(w);
        } else if (op < 0.95 && held.length > 0) {
          const [g, w] = held[rng.int(held.length)]!;
          const n = 1 + rng.int(3);
          expect(got.grow(g, n)).to.equal(want.grow(w, n));
        } else if (op < 0.99) {
          const c = 16 + rng.int(200);
          got.resize(c);
          want.resize(c);
        } else {
          got.clear();
          want.clear();
        }
        expect(got.usedBlocks).to.equal(want.usedBlocks);
        expect(got.freeCachedBlocks).to.equal(want.freeCachedBlocks);
        expect(got.evictions).to.equal(want.evictions);
      }
      expect(got.evictionOrder()).to.deep.equal(want.evictionOrder());
      expect(gotEvents).to.deep.equal(wantEvents);
      expect(want.evictions).to.be.greaterThan(100); // the churn did exercise eviction
    }
  });
});
