import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { PluginCatalog } from '../../../src/framework/plugin-api.js';
import { fakeType } from '../builders.js';

describe('PluginCatalog', () => {
  it('keeps plugin types by id, sorted', () => {
    const c = new PluginCatalog().register(fakeType('b', (name) => ({ name }))).register(fakeType('a', (name) => ({ name })));
    expect(c.typeIds()).to.deep.equal(['a', 'b']);
    expect(c.has('a')).to.equal(true);
    expect(c.get('zzz')).to.equal(undefined);
    expect(c.all().map((t) => t.type)).to.deep.equal(['a', 'b']);
  });

  it('refuses duplicate plugin types', () => {
    const c = new PluginCatalog().register(fakeType('t', (name) => ({ name })));
    let err: unknown;
    try {
      c.register(fakeType('t', (name) => ({ name })));
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
  });
});
