import { expect } from 'chai';
import { BlockHasher } from '../../../../src/prefix-cache/block-hasher.js';
import { cycleBlockHashes, requestBlockHashes } from '../../../../src/plugins/shared/cycle-keys.js';
import { cycle, text } from '../../builders.js';

describe('cycle keys of the built-in plugins', () => {
  it('hashes the request once per cycle per hasher', () => {
    const hasher = new BlockHasher({ blockChars: 8, maxBlocks: 8 });
    let calls = 0;
    const counting = Object.assign(Object.create(hasher) as BlockHasher, {
      hash: (m: string, p: string) => {
        calls++;
        return hasher.hash(m, p);
      },
    });
    const st = cycle({ prefix: text(1, 40) });
    expect(cycleBlockHashes(st)).to.equal(undefined);
    const a = requestBlockHashes(st, counting);
    const b = requestBlockHashes(st, counting);
    expect(a).to.equal(b);
    expect(calls).to.equal(1);
    expect(cycleBlockHashes(st)?.count).to.equal(5);
    const other = new BlockHasher({ blockChars: 4, maxBlocks: 8 });
    expect(requestBlockHashes(st, other).count).to.equal(8);
  });
});
