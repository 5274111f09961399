import { expect } from 'chai';
import fc from 'fast-check';
import { BlockHasher, copyBlockHashes, type BlockHashes } from '../../../src/prefix-cache/block-hasher.js';
import { isRouterError } from '../../../src/core/errors.js';
import { text } from '../scheduling/builders.js';

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

  it('gives distinct 64-bit keys to 50k distinct blocks', () => {
    const h = new BlockHasher({ blockChars: 16, maxBlocks: 1 });
    const seen = new Set<string>();
    for (let i = 0; i < 50_000; i++) {
      const k = keys(h.hash('m', `block-${i}`.padEnd(16, '.')))[0]!;
      seen.add(k);
    }
    expect(seen.size).to.equal(50_000);
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
