import { expect } from 'chai';
import { hashString32, xxh64, xxh64String, Xxh64Arena } from '../../../src/prefix-cache/xxhash.js';
import { seededRng } from '../../../src/util/rng.js';

describe('prefix-cache/xxhash', () => {
  it('is standard xxHash (reference vectors of XXH64 and XXH32)', () => {
    expect(xxh64String('', 0n)).to.equal(0xef46db3751d8e999n);
    expect(xxh64String('abc', 0n)).to.equal(0x44bc2cf5ad770999n);
    expect(xxh64(Buffer.from('abc'), 0n)).to.equal(0x44bc2cf5ad770999n);
    expect(hashString32('', 0)).to.equal(0x02cc5d05);
    expect(hashString32('abc', 0)).to.equal(0x32d153ff);
  });

  it('depends on the seed and the content; 32-bit results are unsigned', () => {
    expect(hashString32('abc', 1)).to.equal(hashString32('abc', 1));
    expect(hashString32('abc', 1)).to.not.equal(hashString32('abc', 2));
    expect(hashString32('abc', 1)).to.not.equal(hashString32('abd', 1));
    expect(hashString32('abc', -1)).to.equal(hashString32('abc', 0xffffffff));
    expect(xxh64(Buffer.from('abc'), 1n)).to.not.equal(xxh64(Buffer.from('abc'), 2n));
    for (let i = 0; i < 1000; i++) expect(hashString32(String(i), 7)).to.be.within(0, 0xffffffff);
  });

  it("the arena (the package's module called directly) hashes exactly as the package's API, at any offset, length and seed", () => {
    const arena = new Xxh64Arena(70_000);
    expect(arena.capacity).to.equal(70_000);
    const rng = seededRng(12);
    for (let k = 0; k < 300; k++) {
      const len = k % 50 === 0 ? 40_000 + rng.int(20_000) : rng.int(300);
      const off = rng.int(arena.capacity - len);
      for (let i = 0; i < len; i++) arena.bytes[off + i] = rng.int(256);
      const seed = (BigInt(rng.int(2 ** 31)) << 33n) | BigInt(rng.int(2 ** 31));
      const direct = BigInt.asUintN(64, arena.hash(off, len, seed));
      expect(direct).to.equal(xxh64(Uint8Array.from(arena.bytes.subarray(off, off + len)), seed));
    }
    arena.bytes.write('abc', 0, 'latin1');
    expect(BigInt.asUintN(64, arena.hash(0, 3, 0n))).to.equal(0x44bc2cf5ad770999n);
  });
});
