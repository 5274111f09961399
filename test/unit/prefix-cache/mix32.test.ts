import { expect } from 'chai';
import { fmix32, hashString32, rotl32 } from '../../../src/prefix-cache/mix32.js';

describe('mix32', () => {
  it('fmix32 is a bijection on a sample (no collisions among 100k consecutive inputs)', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 100_000; i++) seen.add(fmix32(i));
    expect(seen.size).to.equal(100_000);
    expect(fmix32(0)).to.equal(0);
  });

  it('fmix32 avalanches: flipping one input bit flips about half the output bits', () => {
    let flips = 0;
    let trials = 0;
    for (let x = 1; x < 2000; x++) {
      for (let b = 0; b < 32; b += 7) {
        const d = (fmix32(x) ^ fmix32(x ^ (1 << b))) >>> 0;
        flips += d.toString(2).split('1').length - 1;
        trials++;
      }
    }
    const mean = flips / trials;
    expect(mean).to.be.within(14, 18);
  });

  it('rotl32 rotates', () => {
    expect(rotl32(1, 1)).to.equal(2);
    expect(rotl32(0x80000000 | 0, 1)).to.equal(1);
  });

  it('hashString32 depends on the seed and the content', () => {
    expect(hashString32('abc', 1)).to.equal(hashString32('abc', 1));
    expect(hashString32('abc', 1)).to.not.equal(hashString32('abc', 2));
    expect(hashString32('abc', 1)).to.not.equal(hashString32('abd', 1));
    expect(hashString32('', 1)).to.not.equal(hashString32('', 2));
  });
});
