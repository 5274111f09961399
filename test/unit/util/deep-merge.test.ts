import { expect } from 'chai';
import { deepMerge } from '../../../src/util/deep-merge.js';

describe('deepMerge', () => {
  it('merges nested mappings key by key, and lists and scalars from the override replace', () => {
    const base = { a: 1, nested: { x: 1, y: [1, 2], deeper: { k: 'base' } }, list: [1] };
    const out = deepMerge(base, { nested: { y: [3], deeper: { j: 2 } }, list: [9, 9], b: 'new' });
    expect(out).to.deep.equal({ a: 1, nested: { x: 1, y: [3], deeper: { k: 'base', j: 2 } }, list: [9, 9], b: 'new' });
  });

  it('keeps the base value where the override leaves a key undefined, and lets null replace it', () => {
    const out = deepMerge({ a: 1, n: { x: 1 } }, { a: undefined, n: { x: undefined }, z: null });
    expect(out).to.deep.equal({ a: 1, n: { x: 1 }, z: null });
  });

  it('leaves both inputs untouched', () => {
    const base = { n: { x: 1 } };
    const over = { n: { y: 2 } };
    deepMerge(base, over);
    expect(base).to.deep.equal({ n: { x: 1 } });
    expect(over).to.deep.equal({ n: { y: 2 } });
  });
});
