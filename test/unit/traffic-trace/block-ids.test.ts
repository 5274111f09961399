import { expect } from 'chai';
import { BlockHasher, copyBlockHashes } from '../../../src/prefix-cache/block-hasher.js';
import { BlockIdMap } from '../../../src/traffic-trace/block-ids.js';
import { text } from '../builders.js';

describe('traffic-trace block ids', () => {
  const hasher = new BlockHasher({ blockChars: 16, maxBlocks: 100 });
  const hashes = (model: string, prefix: string) => copyBlockHashes(hasher.hash(model, prefix));

  it('numbers blocks in order of first appearance; a shared prefix shares its ids, a divergence does not', () => {
    const ids = new BlockIdMap(1000);
    const system = text(1, 48); // three blocks
    expect(ids.idsOf(hashes('m', system + text(2, 32)))).to.deep.equal([0, 1, 2, 3, 4]);
    expect(ids.idsOf(hashes('m', system + text(3, 32)))).to.deep.equal([0, 1, 2, 5, 6]);
    // The same block text after a different start is a different chain: new ids.
    expect(ids.idsOf(hashes('m', text(4, 16) + system.slice(16)))).to.deep.equal([7, 8, 9]);
    // Another model never shares (engines do not share KV across models).
    expect(ids.idsOf(hashes('other', system))).to.deep.equal([10, 11, 12]);
  });

  it('restarts numbering on reset (each file is a trace of its own)', () => {
    const ids = new BlockIdMap(1000);
    ids.idsOf(hashes('m', text(5, 64)));
    ids.reset();
    expect(ids.size).to.equal(0);
    expect(ids.idsOf(hashes('m', text(6, 32)))).to.deep.equal([0, 1]);
  });

  it('stays within maxKeys: unremembered blocks get fresh ids (less sharing, never false sharing)', () => {
    const ids = new BlockIdMap(2);
    const p = text(7, 48);
    expect(ids.idsOf(hashes('m', p))).to.deep.equal([0, 1, 2]);
    expect(ids.size).to.equal(2);
    expect(ids.idsOf(hashes('m', p))).to.deep.equal([0, 1, 3]);
    expect(ids.size).to.equal(2);
  });
});
