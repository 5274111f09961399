import { expect } from 'chai';
import fc from 'fast-check';
import type { BlockHashes } from '../../../src/prefix-cache/block-hasher.js';
import { hashString32 } from '../../../src/prefix-cache/xxhash.js';
import { PrefixIndex } from '../../../src/prefix-cache/prefix-index.js';
import { isRouterError } from '../../../src/core/errors.js';

/**
 * Synthetic chained hashes: a "prompt" is a list of small symbols; block i's key names the
 * whole path symbols[0..i], so prompts with a common head share exactly those keys (as the
 * real chained hasher guarantees; its own tests check that).
 */
function chain(symbols: readonly number[]): BlockHashes {
  const lo = new Int32Array(symbols.length);
  const hi = new Int32Array(symbols.length);
  let path = '';
  symbols.forEach((s, i) => {
    path += `${s},`;
    lo[i] = hashString32(path, 11);
    hi[i] = hashString32(path, 97);
  });
  return { count: symbols.length, lo, hi };
}

/** Straightforward reference model: per endpoint a Map in LRU order (first = oldest). */
class ModelIndex {
  readonly lru: Map<string, true>[];
  readonly cap: number[];
  constructor(n: number, cap: number) {
    this.lru = Array.from({ length: n }, () => new Map());
    this.cap = Array.from({ length: n }, () => cap);
  }
  private key(h: BlockHashes, i: number): string {
    return `${h.hi[i]}:${h.lo[i]}`;
  }
  insert(e: number, h: BlockHashes): void {
    const m = this.lru[e]!;
    const limit = Math.min(h.count, this.cap[e]!);
    for (let i = limit - 1; i >= 0; i--) {
      const k = this.key(h, i);
      m.delete(k);
      m.set(k, true);
      if (m.size > this.cap[e]!) m.delete(m.keys().next().value!);
    }
  }
  match(h: BlockHashes): number[] {
    return this.lru.map((m) => {
      let i = 0;
      while (i < h.count && m.has(this.key(h, i))) i++;
      return i;
    });
  }
  removeBlocks(e: number, from: number, h: BlockHashes): void {
    for (let i = Math.max(0, from); i < h.count; i++) this.lru[e]!.delete(this.key(h, i));
  }
  evict(e: number): void {
    this.lru[e]!.clear();
  }
  setCapacity(e: number, c: number): void {
    this.cap[e] = c;
    const m = this.lru[e]!;
    while (m.size > c) m.delete(m.keys().next().value!);
  }
}

// Small alphabet and short prompts so prompts recur and share heads often.
const prompt = fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 0, maxLength: 6 });
type Op =
  | { op: 'insert'; e: number; p: number[] }
  | { op: 'remove'; e: number; from: number; p: number[] }
  | { op: 'evict'; e: number }
  | { op: 'cap'; e: number; c: number }
  | { op: 'match'; p: number[] };

function opArb(n: number): fc.Arbitrary<Op> {
  const e = fc.integer({ min: 0, max: n - 1 });
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constant('insert' as const), e, p: prompt }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), e, from: fc.integer({ min: 0, max: 6 }), p: prompt }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('evict' as const), e }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('cap' as const), e, c: fc.integer({ min: 0, max: 12 }) }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('match' as const), p: prompt }) },
  );
}

function matchOf(ix: PrefixIndex, h: BlockHashes): number[] {
  return Array.from(ix.match(h));
}

describe('PrefixIndex', () => {
  it('behaves like a per-endpoint LRU of chained blocks under random operations (model-based)', () => {
    for (const n of [3, 37]) {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 10 }), fc.array(opArb(n), { minLength: 10, maxLength: 150, size: 'max' }), (cap, ops) => {
          const ix = new PrefixIndex({ endpoints: n, capacityBlocks: cap, initialSlots: 64 });
          const model = new ModelIndex(n, cap);
          for (const o of ops) {
            switch (o.op) {
              case 'insert':
                ix.insert(o.e, chain(o.p));
                model.insert(o.e, chain(o.p));
                break;
              case 'remove':
                ix.removeBlocks(o.e, o.from, chain(o.p));
                model.removeBlocks(o.e, o.from, chain(o.p));
                break;
              case 'evict':
                ix.evictEndpoint(o.e);
                model.evict(o.e);
                break;
              case 'cap':
                ix.setCapacity(o.e, o.c);
                model.setCapacity(o.e, o.c);
                break;
              case 'match':
                expect(matchOf(ix, chain(o.p))).to.deep.equal(model.match(chain(o.p)));
                break;
            }
            ix.checkInvariants();
          }
          for (let e = 0; e < n; e++) expect(ix.size(e)).to.equal(model.lru[e]!.size);
        }),
        { numRuns: 300, seed: 7 },
      );
    }
  });

  it('galloping match equals the walk on long branching prompts, also after removeBlocks leaves orphans (model-based)', () => {
    // Prompts of up to 40 blocks that share heads of random length: a few stems, then a tail.
    const longPrompt = fc
      .tuple(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 40 }),
      )
      .map(([stem, head, branch, tail]) => [
        ...Array.from({ length: head }, (_, i) => 1000 * stem + i),
        ...Array.from({ length: tail }, (_, i) => 100_000 + 1000 * branch + i),
      ]);
    const longOp = (n: number): fc.Arbitrary<Op> => {
      const e = fc.integer({ min: 0, max: n - 1 });
      return fc.oneof(
        { weight: 6, arbitrary: fc.record({ op: fc.constant('insert' as const), e, p: longPrompt }) },
        {
          weight: 1,
          arbitrary: fc.record({ op: fc.constant('remove' as const), e, from: fc.integer({ min: 0, max: 40 }), p: longPrompt }),
        },
        { weight: 1, arbitrary: fc.record({ op: fc.constant('cap' as const), e, c: fc.integer({ min: 0, max: 120 }) }) },
        { weight: 4, arbitrary: fc.record({ op: fc.constant('match' as const), p: longPrompt }) },
      );
    };
    for (const n of [4, 35]) {
      fc.assert(
        fc.property(fc.integer({ min: 10, max: 120 }), fc.array(longOp(n), { minLength: 10, maxLength: 120, size: 'max' }), (cap, ops) => {
          const ix = new PrefixIndex({ endpoints: n, capacityBlocks: cap, initialSlots: 64 });
          const model = new ModelIndex(n, cap);
          for (const o of ops) {
            if (o.op === 'insert') {
              ix.insert(o.e, chain(o.p));
              model.insert(o.e, chain(o.p));
            } else if (o.op === 'remove') {
              ix.removeBlocks(o.e, o.from, chain(o.p));
              model.removeBlocks(o.e, o.from, chain(o.p));
            } else if (o.op === 'cap') {
              ix.setCapacity(o.e, o.c);
              model.setCapacity(o.e, o.c);
            } else if (o.op === 'match') {
              const want = model.match(chain(o.p));
              expect(matchOf(ix, chain(o.p))).to.deep.equal(want);
              expect(Array.from(ix.matchByWalk(chain(o.p)))).to.deep.equal(want);
            }
          }
          ix.checkInvariants();
        }),
        { numRuns: 150, seed: 11 },
      );
    }
  });

  it('walks an endpoint whose removeBlocks left orphans until every old entry is touched again', () => {
    const ix = new PrefixIndex({ endpoints: 2, capacityBlocks: 100 });
    const x = chain(Array.from({ length: 16 }, (_, i) => i));
    const y = chain([0, 1, 2, 3, 4, 5, ...Array.from({ length: 10 }, (_, i) => 100 + i)]);
    ix.insert(0, y);
    ix.insert(0, x);
    ix.insert(1, y);
    expect(ix.stats().walkedEndpoints).to.equal(0);
    // Calibration: endpoint 0 lacks x from block 5 on. Block 5 is also y's, so y's blocks
    // 6..15 stay behind without their parent. A search probing 0, 1, 3, 7, 15 would see
    // them all held and answer 16; the true match is 5.
    expect(ix.removeBlocks(0, 5, x)).to.equal(11);
    expect(ix.stats().walkedEndpoints).to.equal(1);
    expect(matchOf(ix, y)).to.deep.equal([5, 16]);
    ix.checkInvariants();
    // Routing y to endpoint 0 again re-inserts its whole prefix: every entry is post-removal.
    ix.insert(0, y);
    expect(ix.stats().walkedEndpoints).to.equal(0);
    expect(matchOf(ix, y)).to.deep.equal([16, 16]);
    expect(matchOf(ix, x)).to.deep.equal([6, 6]); // block 5 is y's too
    ix.checkInvariants();
  });

  it('an endpoint left with only untouched entries becomes searchable again once they are evicted', () => {
    const ix = new PrefixIndex({ endpoints: 1, capacityBlocks: 8 });
    const a = chain([1, 2, 3, 4]);
    ix.insert(0, a);
    ix.insert(0, chain([7, 7]));
    ix.removeBlocks(0, 2, a);
    expect(ix.stats().walkedEndpoints).to.equal(1);
    for (let k = 0; k < 4; k++) ix.insert(0, chain([50 + k, 60 + k]));
    expect(ix.size(0)).to.equal(8);
    expect(ix.stats().walkedEndpoints).to.equal(0);
    ix.checkInvariants();
  });

  it('a prefix of an inserted prompt always matches fully on that endpoint', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 40 }), fc.nat(), (p, cut) => {
        const ix = new PrefixIndex({ endpoints: 4, capacityBlocks: 64 });
        ix.insert(2, chain(p));
        const k = cut % (p.length + 1);
        const m = matchOf(ix, chain(p.slice(0, k)));
        expect(m[2]).to.equal(k);
        expect(m[0]).to.equal(0);
      }),
      { numRuns: 200, seed: 3 },
    );
  });

  it('never reports more matched blocks than were inserted, nor than the query has', () => {
    fc.assert(
      fc.property(fc.array(prompt, { maxLength: 10 }), prompt, (inserted, query) => {
        const ix = new PrefixIndex({ endpoints: 2, capacityBlocks: 1000 });
        let total = 0;
        for (const p of inserted) {
          ix.insert(0, chain(p));
          total += p.length;
        }
        const m = matchOf(ix, chain(query));
        expect(m[0]).to.be.at.most(Math.min(total, query.length));
        expect(m[1]).to.equal(0);
      }),
      { numRuns: 200, seed: 5 },
    );
  });

  it('LRU eviction forgets the oldest blocks first and keeps the capacity', () => {
    const cap = 8;
    const ix = new PrefixIndex({ endpoints: 1, capacityBlocks: cap });
    const single = (i: number): BlockHashes => chain([1000 + i]);
    for (let i = 0; i < cap + 3; i++) ix.insert(0, single(i));
    expect(ix.size(0)).to.equal(cap);
    for (let i = 0; i < 3; i++) expect(matchOf(ix, single(i))[0], `old ${i}`).to.equal(0);
    for (let i = 3; i < cap + 3; i++) expect(matchOf(ix, single(i))[0], `recent ${i}`).to.equal(1);
  });

  it('re-inserting touches an entry to most recently used', () => {
    const ix = new PrefixIndex({ endpoints: 1, capacityBlocks: 3 });
    const s = (i: number): BlockHashes => chain([i]);
    ix.insert(0, s(1));
    ix.insert(0, s(2));
    ix.insert(0, s(3));
    ix.insert(0, s(1)); // 1 becomes MRU; 2 is now the oldest
    ix.insert(0, s(4));
    expect(matchOf(ix, s(2))[0]).to.equal(0);
    expect(matchOf(ix, s(1))[0]).to.equal(1);
    expect(matchOf(ix, s(3))[0]).to.equal(1);
  });

  it('evicts a long prompt from its tail, never leaving a tail without its head', () => {
    const ix = new PrefixIndex({ endpoints: 1, capacityBlocks: 10 });
    ix.insert(0, chain([1, 2, 3, 4, 5, 6, 7, 8]));
    ix.insert(0, chain([9, 9, 9, 9])); // needs 2 evictions: blocks 8 and 7 of the first prompt
    expect(matchOf(ix, chain([1, 2, 3, 4, 5, 6, 7, 8]))[0]).to.equal(6);
  });

  it('inserts only the first `capacity` blocks of a prompt longer than the capacity', () => {
    const ix = new PrefixIndex({ endpoints: 1, capacityBlocks: 3 });
    ix.insert(0, chain([1, 2, 3, 4, 5]));
    expect(ix.size(0)).to.equal(3);
    expect(matchOf(ix, chain([1, 2, 3, 4, 5]))[0]).to.equal(3);
  });

  it('matches all endpoints in one pass, with each endpoint dropping out where its prefix ends', () => {
    const ix = new PrefixIndex({ endpoints: 40, capacityBlocks: 100 });
    ix.insert(0, chain([1, 2, 3]));
    ix.insert(5, chain([1, 2, 3, 4, 5]));
    ix.insert(33, chain([1, 2]));
    ix.insert(39, chain([1, 2, 3, 4, 5, 6]));
    const m = matchOf(ix, chain([1, 2, 3, 4, 5, 6, 7]));
    expect(m[0]).to.equal(3);
    expect(m[5]).to.equal(5);
    expect(m[33]).to.equal(2);
    expect(m[39]).to.equal(6);
    expect(m.filter((v, i) => ![0, 5, 33, 39].includes(i) && v !== 0)).to.deep.equal([]);
  });

  it('evictEndpoint clears that endpoint only and frees slots nobody else holds', () => {
    const ix = new PrefixIndex({ endpoints: 3, capacityBlocks: 100 });
    ix.insert(0, chain([1, 2, 3]));
    ix.insert(1, chain([1, 2]));
    ix.insert(1, chain([7, 7]));
    expect(ix.stats().blocks).to.equal(5);
    ix.evictEndpoint(1);
    ix.checkInvariants();
    expect(ix.size(1)).to.equal(0);
    expect(matchOf(ix, chain([1, 2, 3]))).to.deep.equal([3, 0, 0]);
    expect(matchOf(ix, chain([7, 7]))).to.deep.equal([0, 0, 0]);
    expect(ix.stats().blocks).to.equal(3);
  });

  it('removeBlocks forgets from a block onwards (calibration)', () => {
    const ix = new PrefixIndex({ endpoints: 2, capacityBlocks: 100 });
    const p = chain([1, 2, 3, 4, 5]);
    ix.insert(0, p);
    ix.insert(1, p);
    expect(ix.removeBlocks(0, 2, p)).to.equal(3);
    expect(matchOf(ix, p)).to.deep.equal([2, 5]);
    expect(ix.removeBlocks(0, 2, p)).to.equal(0);
  });

  it('setCapacity shrinks by evicting the oldest, and capacity 0 stores nothing', () => {
    const ix = new PrefixIndex({ endpoints: 2, capacityBlocks: 10 });
    for (let i = 0; i < 6; i++) ix.insert(0, chain([i]));
    ix.setCapacity(0, 2);
    expect(ix.size(0)).to.equal(2);
    expect(matchOf(ix, chain([3]))[0]).to.equal(0);
    expect(matchOf(ix, chain([5]))[0]).to.equal(1);
    ix.setCapacity(1, 0);
    ix.insert(1, chain([1, 2]));
    expect(ix.size(1)).to.equal(0);
    expect(ix.capacity(1)).to.equal(0);
    ix.checkInvariants();
  });

  it('handles exactly 32 endpoints (a full single mask word)', () => {
    const ix = new PrefixIndex({ endpoints: 32, capacityBlocks: 10 });
    ix.insert(31, chain([1, 2, 3]));
    ix.insert(0, chain([1]));
    const m = matchOf(ix, chain([1, 2, 3, 4]));
    expect([m[0], m[31], m[15]]).to.deep.equal([1, 3, 0]);
  });

  it('survives table growth and heavy churn (many slot deletions) with invariants intact', () => {
    const ix = new PrefixIndex({ endpoints: 4, capacityBlocks: 300, initialSlots: 64 });
    for (let r = 0; r < 4000; r++) ix.insert(r % 4, chain([r % 97, r % 13, r]));
    ix.checkInvariants();
    const s = ix.stats();
    expect(s.entries).to.equal(1200);
    expect(s.slots).to.be.at.least(s.blocks * 2);
    expect(s.bytes).to.be.greaterThan(0);
    // The most recent prompt of each endpoint is fully present.
    for (let e = 0; e < 4; e++) {
      const r = 3996 + e;
      expect(matchOf(ix, chain([r % 97, r % 13, r]))[e]).to.equal(3);
    }
  });

  it('grows to more endpoints (beyond one 32-bit mask word) keeping existing entries', () => {
    const ix = new PrefixIndex({ endpoints: 2, capacityBlocks: 10 });
    ix.insert(1, chain([4, 5]));
    ix.ensureEndpoints(70);
    expect(ix.endpointCount).to.equal(70);
    ix.insert(69, chain([4, 5, 6]));
    ix.insert(40, chain([4]));
    const m = matchOf(ix, chain([4, 5, 6]));
    expect([m[1], m[40], m[69], m[0]]).to.deep.equal([2, 1, 3, 0]);
    ix.checkInvariants();
  });

  it('rejects out-of-range endpoints and bad sizes', () => {
    const ix = new PrefixIndex({ endpoints: 2, capacityBlocks: 10 });
    const codes: string[] = [];
    for (const f of [
      () => ix.insert(2, chain([1])),
      () => ix.evictEndpoint(-1),
      () => ix.setCapacity(0, -5),
      () => new PrefixIndex({ endpoints: 1.5, capacityBlocks: 1 }),
    ]) {
      try {
        f();
      } catch (e) {
        if (isRouterError(e)) codes.push(e.code);
      }
    }
    expect(codes).to.deep.equal(['INTERNAL', 'INTERNAL', 'BAD_CONFIG', 'BAD_CONFIG']);
  });
});
