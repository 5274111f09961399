import { expect } from 'chai';
import { EndpointPresence } from '../../../../src/plugins/shared/endpoint-presence.js';
import { endpoint } from '../../builders.js';

describe('EndpointPresence', () => {
  it('reports nothing departed on the first set, and the size per-index arrays need', () => {
    const p = new EndpointPresence();
    expect(p.update([endpoint(0), endpoint(3)])).to.deep.equal({ size: 4, departed: [] });
  });

  it('reports the indices that left since the previous set, once', () => {
    const p = new EndpointPresence();
    p.update([endpoint(0), endpoint(1), endpoint(2)]);
    expect(p.update([endpoint(1), endpoint(4)])).to.deep.equal({ size: 5, departed: [0, 2] });
    expect(p.update([endpoint(1), endpoint(4)]).departed).to.deep.equal([]);
  });

  it('sizes an empty set to 0 and departs everyone', () => {
    const p = new EndpointPresence();
    p.update([endpoint(2)]);
    expect(p.update([])).to.deep.equal({ size: 0, departed: [2] });
  });
});
