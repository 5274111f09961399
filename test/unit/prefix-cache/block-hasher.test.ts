import { expect } from 'chai';
import fc from 'fast-check';
import {
  BlockHasher,
  blockKeyAt,
  chainTokenBlocks,
  copyBlockHashes,
  modelKey,
  tokenBlockKey,
  type BlockHashes,
} from '../../../src/prefix-cache/block-hasher.js';
import { xxh64, xxh64String } from '../../../src/prefix-cache/xxhash.js';
import { isRouterError } from '../../../src/core/errors.js';
import { text } from '../builders.js';
import { seededRng } from '../../../src/util/rng.js';

function keys(h: BlockHashes): string[] {
  const out: string[] = [];
  for (let i = 0; i < h.count; i++) out.push(`${h.hi[i]}:${h.lo[i]}`);
  return out;
}

describe('BlockHasher', () => {
  it('counts only full blocks, capped at maxBlocks', () => {
    const h = new BlockHasher({ blockChars: 8, maxBlocks: 4 });
    const cases: Array<[number, number]> = [
      [0, 0],
      [7, 0],
      [8, 1],
      [15, 1],
      [16, 2],
      [32, 4],
      [100, 4],
    ];
    for (const [len, blocks] of cases) {
      expect(h.hash('m', 'x'.repeat(len)).count, `len ${len}`).to.equal(blocks);
      expect(h.blockCount(len)).to.equal(blocks);
    }
  });

  it('is deterministic across instances', () => {
    const p = text(1, 640);
    const a = keys(new BlockHasher({ blockChars: 64, maxBlocks: 16 }).hash('m', p));
    const b = keys(new BlockHasher({ blockChars: 64, maxBlocks: 16 }).hash('m', p));
    expect(a).to.deep.equal(b);
    expect(a).to.have.length(10);
  });

  it('chains: prefixes sharing exactly k blocks share exactly the first k hashes', () => {
    const h = new BlockHasher({ blockChars: 16, maxBlocks: 64 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1 << 30 }),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 15 }),
        (seed, k, extra, pos) => {
          const a = text(seed, (k + extra) * 16);
          // Change one character inside block k; everything before stays identical.
          const at = k * 16 + pos;
          const b = a.slice(0, at) + (a[at] === 'q' ? 'r' : 'q') + a.slice(at + 1);
          const ka = keys(copyBlockHashes(h.hash('m', a)));
          const kb = keys(h.hash('m', b));
          for (let i = 0; i < k; i++) expect(kb[i]).to.equal(ka[i]);
          for (let i = k; i < k + extra; i++) expect(kb[i]).to.not.equal(ka[i]);
        },
      ),
      { numRuns: 200, seed: 42 },
    );
  });

  it('a change in the first block changes every later block (chain, not per-block hashing)', () => {
    const h = new BlockHasher({ blockChars: 64, maxBlocks: 8 });
    const tail = text(3, 64 * 7);
    const a = keys(copyBlockHashes(h.hash('m', 'A'.repeat(64) + tail)));
    const b = keys(h.hash('m', 'B'.repeat(64) + tail));
    for (let i = 0; i < 8; i++) expect(a[i]).to.not.equal(b[i]);
  });

  it('seeds the chain with the model name', () => {
    const h = new BlockHasher({ blockChars: 64, maxBlocks: 8 });
    const p = text(4, 512);
    const a = keys(copyBlockHashes(h.hash('llama', p)));
    const b = keys(copyBlockHashes(h.hash('qwen', p)));
    const c = keys(h.hash('llama', p));
    expect(a).to.deep.equal(c);
    for (let i = 0; i < 8; i++) expect(a[i]).to.not.equal(b[i]);
  });

  it('reuses its buffers; copyBlockHashes keeps a stable copy', () => {
    const h = new BlockHasher({ blockChars: 8, maxBlocks: 4 });
    const first = h.hash('m', 'abcdefgh');
    const copy = copyBlockHashes(first);
    const second = h.hash('m', 'zzzzzzzz');
    expect(second).to.equal(first);
    expect(copy.lo[0]).to.not.equal(second.lo[0]);
    expect(copy.count).to.equal(1);
  });

  it('handles a surrogate pair straddling the last block boundary without stale buffer bytes', () => {
    const blockChars = 8;
    const emoji = '\u{1F600}'; // two UTF-16 code units
    const p = 'abcdefg' + emoji + 'xyz'; // unit 7 = high surrogate, unit 8 = low surrogate
    const dirty = new BlockHasher({ blockChars, maxBlocks: 1 });
    dirty.hash('m', 'QQQQQQQQQQQQ'); // leave other bytes in the buffer
    const got = keys(dirty.hash('m', p));
    const fresh = keys(new BlockHasher({ blockChars, maxBlocks: 1 }).hash('m', p.slice(0, 8)));
    expect(got).to.deep.equal(fresh);
    const noSurrogate = keys(new BlockHasher({ blockChars, maxBlocks: 1 }).hash('m', 'abcdefgX'));
    expect(got).to.not.deep.equal(noSurrogate);
  });

  it('supports any block size, odd ones included', () => {
    for (const blockChars of [1, 2, 3, 6, 10, 63, 66]) {
      const h = new BlockHasher({ blockChars, maxBlocks: 8 });
      const a = text(9, blockChars * 4);
      const b = a.slice(0, blockChars * 3) + 'Z' + a.slice(blockChars * 3 + 1);
      const ka = keys(copyBlockHashes(h.hash('m', a)));
      const kb = keys(h.hash('m', b));
      expect(kb.slice(0, 3), `blockChars ${blockChars}`).to.deep.equal(ka.slice(0, 3));
      expect(kb[3]).to.not.equal(ka[3]);
    }
  });

  it('gives distinct 64-bit keys to 10^6 distinct low-entropy blocks; each 32-bit half collides no more often than a random function would', () => {
    const h = new BlockHasher({ blockChars: 16, maxBlocks: 1 });
    const n = 1_000_000;
    const full = new BigUint64Array(n);
    const lo = new Uint32Array(n);
    const hi = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      // Decimal counters: blocks differing in a digit or two, the hard case for a weak mix.
      const k = h.hash('m', String(i).padStart(16, '0'));
      lo[i] = k.lo[0]! >>> 0;
      hi[i] = k.hi[0]! >>> 0;
      full[i] = (BigInt(hi[i]!) << 32n) | BigInt(lo[i]!);
    }
    const dupes = (a: BigUint64Array | Uint32Array): number => {
      a.sort();
      let d = 0;
      for (let i = 1; i < a.length; i++) if (a[i] === a[i - 1]) d++;
      return d;
    };
    expect(dupes(full)).to.equal(0);
    // A random function gives n²/2^33 ≈ 116 collisions (Poisson, sd ≈ 11) in 32 bits.
    for (const half of [lo, hi]) expect(dupes(half)).to.be.within(70, 160);
  });

  it('avalanches: one flipped input bit flips each of the 64 key bits about half the time', () => {
    for (const wide of [false, true]) {
      const h = new BlockHasher({ blockChars: 64, maxBlocks: 1 });
      const rng = seededRng(wide ? 8 : 7);
      const flips = new Array<number>(64).fill(0);
      const trials = 3000;
      for (let t = 0; t < trials; t++) {
        const units = Array.from({ length: 64 }, () => (wide ? 0x400 : 0x20) + rng.int(0x5f));
        const a = h.hash('m', String.fromCharCode(...units));
        const [alo, ahi] = [a.lo[0]!, a.hi[0]!];
        const pos = rng.int(64);
        units[pos] = units[pos]! ^ (1 << rng.int(wide ? 10 : 6));
        const b = h.hash('m', String.fromCharCode(...units));
        for (let bit = 0; bit < 32; bit++) {
          if (((alo ^ b.lo[0]!) >>> bit) & 1) flips[bit]!++;
          if (((ahi ^ b.hi[0]!) >>> bit) & 1) flips[32 + bit]!++;
        }
      }
      for (let bit = 0; bit < 64; bit++)
        expect(flips[bit]! / trials, `${wide ? 'two-byte' : 'ASCII'} text, key bit ${bit}`).to.be.within(0.44, 0.56);
    }
  });

  it('rejects non-integer or non-positive block sizes with BAD_CONFIG', () => {
    for (const blockChars of [0, -4, 2.5, Number.NaN]) {
      let err: unknown;
      try {
        new BlockHasher({ blockChars, maxBlocks: 4 });
      } catch (e) {
        err = e;
      }
      expect(isRouterError(err, 'BAD_CONFIG'), `blockChars ${blockChars}`).to.equal(true);
    }
  });

  it("is the documented chain: XXH64 of each block's UTF-16LE bytes, seeded with the previous key, the first with XXH64(model)", () => {
    const h = new BlockHasher({ blockChars: 8, maxBlocks: 4 });
    const p = 'abcdefgh\u00e9\u4e2d\u{1F600}xyz' + 'tail....';
    const got = h.hash('my-model', p);
    expect(got.count).to.equal(2);
    let key = xxh64String('my-model', 0n);
    expect(modelKey('my-model')).to.equal(key);
    for (let b = 0; b < 2; b++) {
      key = xxh64(Buffer.from(p.slice(b * 8, b * 8 + 8), 'utf16le'), key);
      expect(blockKeyAt(got, b), `block ${b}`).to.equal(key);
    }
  });
});

describe('token-block keys (engine KV events)', () => {
  it('chains like text blocks: each block seeded with its parent, the first with the model key', () => {
    const tokens = Array.from({ length: 50 }, (_, i) => (i * 7919) % 32000);
    const chained = chainTokenBlocks('m', tokens, 16);
    expect(chained.count).to.equal(3);
    let parent = modelKey('m');
    for (let b = 0; b < 3; b++) {
      parent = tokenBlockKey(parent, tokens.slice(b * 16, b * 16 + 16));
      expect(blockKeyAt(chained, b)).to.equal(parent);
    }
    // The bytes are the ids as little-endian uint32.
    const bytes = Buffer.alloc(16 * 4);
    for (const [i, t] of tokens.slice(0, 16).entries()) bytes.writeUInt32LE(t, i * 4);
    expect(blockKeyAt(chained, 0)).to.equal(xxh64(bytes, modelKey('m')));
  });

  it('gives the same keys for a Uint32Array and a number[], continues from a given parent, and differs by model', () => {
    const ids = [1, 2, 3, 4, 5, 6, 7, 8, 4294967295, 0, 17, 18];
    const a = chainTokenBlocks('m', ids, 4);
    const b = chainTokenBlocks('m', Uint32Array.from(ids), 4);
    expect([0, 1, 2].map((i) => blockKeyAt(a, i))).to.deep.equal([0, 1, 2].map((i) => blockKeyAt(b, i)));
    const tail = chainTokenBlocks('ignored', ids.slice(4), 4, blockKeyAt(a, 0));
    expect([0, 1].map((i) => blockKeyAt(tail, i))).to.deep.equal([1, 2].map((i) => blockKeyAt(a, i)));
    expect(blockKeyAt(chainTokenBlocks('other', ids, 4), 0)).to.not.equal(blockKeyAt(a, 0));
  });

  it('refuses token ids that are not uint32 with BAD_REQUEST', () => {
    for (const bad of [-1, 2 ** 32, 1.5, Number.NaN]) {
      let err: unknown;
      try {
        tokenBlockKey(0n, [1, bad, 3]);
      } catch (e) {
        err = e;
      }
      expect(isRouterError(err, 'BAD_REQUEST'), String(bad)).to.equal(true);
    }
  });
});
