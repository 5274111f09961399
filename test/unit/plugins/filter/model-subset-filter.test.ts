import { expect } from 'chai';
import { ModelSubsetFilter } from '../../../../src/plugins/filter/model-subset-filter.js';
import { candidate, cycle } from '../../builders.js';

describe('ModelSubsetFilter', () => {
  const cs = [candidate(0, {}, { models: ['a'] }), candidate(1, {}, { models: ['b'] }), candidate(2)];
  const f = new ModelSubsetFilter('ms', true);
  const ids = (model: string, subset?: string[]): number[] =>
    f.filter(cycle({ model, ...(subset ? { subset } : {}) }), cs).map((c) => c.endpoint.index);

  it('keeps endpoints serving the model (empty model list = any model)', () => {
    expect(ids('a')).to.deep.equal([0, 2]);
    expect(ids('zzz')).to.deep.equal([2]);
    expect(ids('')).to.deep.equal([0, 1, 2]);
  });

  it('honours the subset hint, and an empty subset leaves nothing', () => {
    expect(ids('', ['10.0.0.2:8000', '10.0.0.3:8000'])).to.deep.equal([1, 2]);
    expect(ids('a', ['10.0.0.2:8000'])).to.deep.equal([]);
    expect(ids('', [])).to.deep.equal([]);
  });

  it('skips work when nothing restricts', () => {
    const plain = [candidate(0), candidate(1)];
    expect(new ModelSubsetFilter('ms', false).filter(cycle({ model: 'x' }), plain)).to.equal(plain);
  });
});
