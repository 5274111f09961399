import { expect } from 'chai';
import fc from 'fast-check';
import { BlockHasher, copyBlockHashes, type BlockHashes } from '../../../src/prefix-cache/block-hasher.js';
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
    const cases: Array<[number, number]> = [[0, 0], [7, 0], [8, 1], [15, 1], [16, 2], [32, 4], [100, 4]];
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
      fc.property(fc.integer({ min: 1, max: 1 << 30 }), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 15 }),
        (seed, k, extra, pos) => {
          const a = text(seed, (k + extra) * 16);
          // Change one character inside block k; everything before stays identical.
          const at = k * 16 + pos;
          const b = a.slice(0, at) + (a[at] === 'q' ? 'r' : 'q') + a.slice(at + 1);
          const ka = keys(copyBlockHashes(h.hash('m', a)));
          const kb = keys(h.hash('m', b));
          for (let i = 0; i < k; i++) expect(kb[i]).to.equal(ka[i]);
          for (let i = k; i < k + extra; i++) expect(kb[i]).to.not.equal(ka[i]);
        }),
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

  it('supports block sizes whose word count is not a multiple of four', () => {
    for (const blockChars of [2, 6, 10, 66]) {
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
    // A random function gives n²/2^33 ≈ 116 collisions (Poisson, sd ≈ 11) in 32 bits. Fewer is
    // fine: blocks differing in a single word never collide in the low half (see the header).
    for (const half of [lo, hi]) expect(dupes(half)).to.be.at.most(160);
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
        units[pos] = units[pos]! ^ (1 << rng.int(wide ? 10 : 6)); // stays printable ASCII / stays above latin1
        const b = h.hash('m', String.fromCharCode(...units));
        for (let bit = 0; bit < 32; bit++) {
          if (((alo ^ b.lo[0]!) >>> bit) & 1) flips[bit]!++;
          if (((ahi ^ b.hi[0]!) >>> bit) & 1) flips[32 + bit]!++;
        }
      }
      for (let bit = 0; bit < 64; bit++) expect(flips[bit]! / trials, `${wide ? 'wide' : 'narrow'} key bit ${bit}`).to.be.within(0.44, 0.56);
    }
  });

  it('hashes a block by its own content only: latin1 blocks keep their keys when the prompt later turns two-byte', () => {
    const h = new BlockHasher({ blockChars: 16, maxBlocks: 16 });
    const head = text(5, 16 * 3) + 'caf\u00e9 cr\u00e8me br\u00fbl\u00e9e!'.slice(0, 16); // 3 ASCII blocks + 1 latin1 block
    const narrow = keys(copyBlockHashes(h.hash('m', head + text(6, 16 * 4))));
    // Same head, then a typographic apostrophe (U+2019) in block 5: now a two-byte string.
    const mixed = keys(copyBlockHashes(h.hash('m', head + text(6, 16) + 'it\u2019s' + text(7, 16 * 3))));
    expect(mixed.slice(0, 5)).to.deep.equal(narrow.slice(0, 5));
    expect(mixed[5]).to.not.equal(narrow[5]);
    // A wide block, then narrow blocks again: a narrow block after a wide one is still hashed narrow.
    const again = keys(h.hash('m', '\u4e2d'.repeat(16) + text(8, 32)));
    const again2 = keys(h.hash('m', '\u4e2d'.repeat(16) + text(8, 32) + '\u{1F600}'));
    expect(again2).to.deep.equal(again);
  });

  it('does not confuse a code unit above 0xFF with its low byte', () => {
    const h = new BlockHasher({ blockChars: 8, maxBlocks: 2 });
    const a = keys(copyBlockHashes(h.hash('m', 'abcdefgA' + 'abcdefgh')));
    const b = keys(copyBlockHashes(h.hash('m', 'abcdefg\u0141' + 'abcdefgh'))); // Ł = 0x141
    const c = keys(h.hash('m', 'abcdefg\u00c1' + 'abcdefgh')); // Á = 0xC1, latin1
    expect(new Set([a[0], b[0], c[0]]).size).to.equal(3);
    expect(new Set([a[1], b[1], c[1]]).size).to.equal(3);
  });

  it('hashes the same for block sizes that cannot use packed bytes, on one- and two-byte strings', () => {
    // blockChars 6 is not a multiple of 4: every block is hashed as UTF-16.
    const h = new BlockHasher({ blockChars: 6, maxBlocks: 8 });
    const ascii = keys(copyBlockHashes(h.hash('m', 'abcdefghijkl')));
    const two = keys(h.hash('m', 'abcdefghijkl\u2019xyzuv'));
    expect(two.slice(0, 2)).to.deep.equal(ascii);
    expect(two).to.have.length(3);
  });

  it('gives the same keys with the WebAssembly kernel as with the JavaScript loop', () => {
    const units = fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
      { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
      { weight: 1, arbitrary: fc.integer({ min: 0x100, max: 0xffff }) },
    );
    for (const blockChars of [4, 6, 8, 16, 64, 68]) {
      const wasm = new BlockHasher({ blockChars, maxBlocks: 40 });
      const js = new BlockHasher({ blockChars, maxBlocks: 40, wasm: false });
      expect(wasm.usesWasm).to.equal(true);
      expect(js.usesWasm).to.equal(false);
      fc.assert(
        fc.property(fc.array(units, { maxLength: blockChars * 12 }), fc.string({ maxLength: 12 }), (codes, model) => {
          const p = String.fromCharCode(...codes);
          expect(keys(wasm.hash(model, p)), `blockChars ${blockChars}`).to.deep.equal(keys(js.hash(model, p)));
        }),
        { numRuns: 150, seed: blockChars },
      );
    }
  });

  it('rejects odd or non-positive block sizes with BAD_CONFIG', () => {
    for (const blockChars of [0, 1, 7, 63, 2.5]) {
      let err: unknown;
      try {
        new BlockHasher({ blockChars, maxBlocks: 4 });
      } catch (e) {
        err = e;
      }
      expect(isRouterError(err, 'BAD_CONFIG'), `blockChars ${blockChars}`).to.equal(true);
    }
  });
});
