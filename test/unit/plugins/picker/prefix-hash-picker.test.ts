import { expect } from 'chai';
import { BlockHasher } from '../../../../src/prefix-cache/block-hasher.js';
import { PrefixHashPicker } from '../../../../src/plugins/picker/prefix-hash-picker.js';
import { candidates, cycle, endpoint, text } from '../../builders.js';

describe('PrefixHashPicker', () => {
  const eps = Array.from({ length: 6 }, (_, i) => endpoint(i));
  const make = (hashBlocks = 2): PrefixHashPicker =>
    new PrefixHashPicker('ph', new BlockHasher({ blockChars: 8, maxBlocks: 16 }), hashBlocks, 100, eps);

  it('sends the same leading blocks to the same endpoint whatever follows', () => {
    const p = make(2);
    const head = text(1, 16);
    const first = p.pick(cycle({ prefix: head + text(2, 40) }), candidates(6)).order[0];
    for (let s = 3; s < 20; s++) expect(p.pick(cycle({ prefix: head + text(s, 40) }), candidates(6)).order[0]).to.equal(first);
  });

  it('spreads different prefixes over the endpoints and labels the reason hash', () => {
    const p = make(2);
    const hit = new Set<number>();
    for (let s = 0; s < 200; s++) {
      const r = p.pick(cycle({ prefix: text(100 + s, 24) }), candidates(6));
      expect(r.reason).to.equal('hash');
      hit.add(r.order[0]!);
    }
    expect(hit.size).to.equal(6);
  });

  it('hashes short prompts (no full block) by their whole text', () => {
    const p = make();
    const hit = new Set<number>();
    for (let s = 0; s < 100; s++) hit.add(p.pick(cycle({ prefix: `hi ${s}` }), candidates(6)).order[0]!);
    expect(hit.size).to.be.greaterThan(3);
    expect(p.pick(cycle({ prefix: 'same' }), candidates(6)).order[0]).to.equal(p.pick(cycle({ prefix: 'same' }), candidates(6)).order[0]);
  });

  it('walks on to the next eligible endpoint when the owner is filtered out', () => {
    const p = make();
    const prefix = text(7, 32);
    const full = p.pick(cycle({ prefix }), candidates(6)).order;
    expect([...full].sort()).to.deep.equal([0, 1, 2, 3, 4, 5]);
    const owner = full[0]!;
    const rest = candidates(6).filter((c) => c.endpoint.index !== owner);
    const order = p.pick(cycle({ prefix }), rest).order.map((pos) => rest[pos]!.endpoint.index);
    expect(order).to.deep.equal(full.slice(1));
  });
});
