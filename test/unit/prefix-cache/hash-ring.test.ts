import { expect } from 'chai';
import { HashRing, type RingMember } from '../../../src/prefix-cache/hash-ring.js';
import { hashString32 } from '../../../src/prefix-cache/xxhash.js';

function members(n: number): RingMember[] {
  return Array.from({ length: n }, (_, i) => ({ index: i, id: `10.0.0.${i + 1}:8000` }));
}
const all = (): boolean => true;
const keyOf = (i: number): number => hashString32(String(i), 1);

describe('HashRing', () => {
  it('is deterministic and independent of member order', () => {
    const a = new HashRing(members(5), 50);
    const b = new HashRing([...members(5)].reverse(), 50);
    for (let i = 0; i < 500; i++) expect(a.walk(keyOf(i), all, 5)).to.deep.equal(b.walk(keyOf(i), all, 5));
    expect(a.size).to.equal(250);
  });

  it('spreads keys roughly evenly with virtual nodes', () => {
    const n = 8;
    const ring = new HashRing(members(n), 160);
    const counts = new Array<number>(n).fill(0);
    const keys = 20_000;
    for (let i = 0; i < keys; i++) counts[ring.walk(keyOf(i), all, 1)[0]!]!++;
    for (const c of counts) expect(c).to.be.within((keys / n) * 0.7, (keys / n) * 1.3);
  });

  it('moves only the keys of a removed member (consistency)', () => {
    const before = new HashRing(members(6), 100);
    const after = new HashRing(
      members(6).filter((m) => m.index !== 3),
      100,
    );
    let moved = 0;
    for (let i = 0; i < 5000; i++) {
      const a = before.walk(keyOf(i), all, 1)[0];
      const b = after.walk(keyOf(i), all, 1)[0];
      if (a !== 3) expect(b).to.equal(a);
      else moved++;
    }
    expect(moved).to.be.greaterThan(0);
  });

  it('walk returns distinct accepted members in ring order up to the limit', () => {
    const ring = new HashRing(members(6), 20);
    const full = ring.walk(keyOf(42), all, 10);
    expect(new Set(full).size).to.equal(6);
    expect(ring.walk(keyOf(42), all, 3)).to.deep.equal(full.slice(0, 3));
    const odd = ring.walk(keyOf(42), (i) => i % 2 === 1, 10);
    expect(odd).to.deep.equal(full.filter((i) => i % 2 === 1));
    expect(ring.walk(keyOf(42), () => false, 10)).to.deep.equal([]);
    expect(new HashRing([], 10).walk(1, all, 3)).to.deep.equal([]);
  });
});
