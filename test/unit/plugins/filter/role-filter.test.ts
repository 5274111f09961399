import { expect } from 'chai';
import { RoleFilter, roleFilter } from '../../../../src/plugins/filter/role-filter.js';
import { candidate, cycle } from '../../builders.js';

describe('role-filter', () => {
  const fleet = [
    candidate(0, {}, { role: 'prefill' }),
    candidate(1, {}, { role: 'decode' }),
    candidate(2),
    candidate(3, {}, { role: 'both' }),
  ];

  it('keeps the listed roles; an engine without a role is both', () => {
    const decode = new RoleFilter('d', ['decode', 'both']).filter(cycle(), fleet);
    expect(decode.map((c) => c.endpoint.index)).to.deep.equal([1, 2, 3]);
    const prefill = new RoleFilter('p', ['prefill']).filter(cycle(), fleet);
    expect(prefill.map((c) => c.endpoint.index)).to.deep.equal([0]);
  });

  it('returns the input unchanged when nothing is dropped, and an empty list (no fail-open) when all are', () => {
    const f = new RoleFilter('x', ['prefill', 'decode', 'both']);
    expect(f.filter(cycle(), fleet)).to.equal(fleet);
    expect(new RoleFilter('p', ['prefill']).filter(cycle(), [candidate(0)])).to.deep.equal([]);
  });

  it('defaults to decode and both; refuses an empty or unknown role list', () => {
    expect(roleFilter.parameters.parse({}).roles).to.deep.equal(['decode', 'both']);
    expect(roleFilter.parameters.safeParse({ roles: [] }).success).to.equal(false);
    expect(roleFilter.parameters.safeParse({ roles: ['prefil'] }).success).to.equal(false);
  });
});
