import { expect } from 'chai';
import { seededRng } from '../../../src/util/rng.js';

/** mulberry32 as first written here (uint32 state): the sequence seededRng must keep drawing. */
function reference(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('util/rng', () => {
  it('draws the reference mulberry32 sequence for any seed (int32 state, same bits)', () => {
    for (const seed of [0, 1, 42, 7 * 42 + 1, -1, 0x7fffffff, 0x80000000, 0xffffffff, 2 ** 40 + 3, -123456789]) {
      const rng = seededRng(seed);
      const ref = reference(seed);
      for (let k = 0; k < 20_000; k++) expect(rng.next(), `seed ${seed} draw ${k}`).to.equal(ref());
      expect(rng.int(1000)).to.equal(Math.floor(ref() * 1000));
    }
  });

  it('snapshot draws what the generator draws next, without moving it or being moved', () => {
    const rng = seededRng(5);
    for (let k = 0; k < 37; k++) rng.next();
    const copy = rng.snapshot!();
    const ahead = Array.from({ length: 100 }, () => copy.next());
    const again = rng.snapshot!();
    expect(Array.from({ length: 100 }, () => rng.next())).to.deep.equal(ahead);
    expect(Array.from({ length: 100 }, () => again.next())).to.deep.equal(ahead);
  });
});
