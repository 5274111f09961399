import { expect } from 'chai';
import { HealthFilter } from '../../../../src/plugins/filter/health-filter.js';
import { candidate, cycle } from '../../builders.js';

describe('HealthFilter', () => {
  it('drops unhealthy endpoints', () => {
    const cs = [candidate(0, { healthy: false }), candidate(1), candidate(2, { healthy: false })];
    expect(new HealthFilter('h', true).filter(cycle(), cs).map((c) => c.endpoint.index)).to.deep.equal([1]);
  });

  it('returns the input unchanged when all are healthy', () => {
    const cs = [candidate(0), candidate(1)];
    expect(new HealthFilter('h', true).filter(cycle(), cs)).to.equal(cs);
  });

  it('fails open (with a note) when all are unhealthy, or closed when configured', () => {
    const cs = [candidate(0, { healthy: false }), candidate(1, { healthy: false })];
    const st = cycle();
    expect(new HealthFilter('h', true).filter(st, cs)).to.have.length(2);
    expect(st.notes[0]).to.match(/failed open/);
    expect(new HealthFilter('h', false).filter(cycle(), cs)).to.have.length(0);
  });
});
