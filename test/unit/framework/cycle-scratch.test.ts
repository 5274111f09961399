import { expect } from 'chai';
import { getScratch, scratchKey, setScratch } from '../../../src/framework/cycle-scratch.js';
import { cycle } from '../builders.js';

describe('cycle scratch', () => {
  it('stores typed values by key', () => {
    const k = scratchKey<number[]>('k');
    const st = cycle();
    expect(getScratch(st, k)).to.equal(undefined);
    setScratch(st, k, [1, 2]);
    expect(getScratch(st, k)).to.deep.equal([1, 2]);
  });
});
