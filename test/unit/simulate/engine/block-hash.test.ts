import { expect } from 'chai';
import { blockHashes, hashBlock } from '../../../../src/simulate/engine/block-hash.js';

const toks = (base: number, n: number): number[] => Array.from({ length: n }, (_, i) => base + i);

describe('sim-engine block hashes', () => {
  it('hashes only full blocks', () => {
    expect(blockHashes(toks(0, 15), 16)).to.have.length(0);
    expect(blockHashes(toks(0, 16), 16)).to.have.length(1);
    expect(blockHashes(toks(0, 47), 16)).to.have.length(2);
  });

  it('chains: equal keys up to the first differing block, different after it', () => {
    const a = blockHashes([...toks(0, 32), ...toks(100, 32)], 16);
    const b = blockHashes([...toks(0, 32), ...toks(200, 16), ...toks(116, 16)], 16);
    expect(a.slice(0, 2)).to.deep.equal(b.slice(0, 2));
    expect(a[2]).to.not.equal(b[2]);
    // Block 3 has identical tokens in both, but a different parent.
    expect(a[3]).to.not.equal(b[3]);
  });

  it('depends on token order within a block and yields safe integers', () => {
    const h1 = hashBlock(0, [1, 2, 3, 4], 0, 4);
    const h2 = hashBlock(0, [2, 1, 3, 4], 0, 4);
    expect(h1).to.not.equal(h2);
    expect(Number.isSafeInteger(h1)).to.equal(true);
  });

  it('isolates requests with different cache salts', () => {
    const t = toks(0, 32);
    expect(blockHashes(t, 16, 'tenant-a')[0]).to.not.equal(blockHashes(t, 16, 'tenant-b')[0]);
    expect(blockHashes(t, 16, 'tenant-a')).to.deep.equal(blockHashes(t, 16, 'tenant-a'));
    expect(blockHashes(t, 16, '')).to.deep.equal(blockHashes(t, 16));
  });
});
