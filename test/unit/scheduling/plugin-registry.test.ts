import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { PluginRegistry, type PluginContext } from '../../../src/scheduling/plugin-registry.js';
import type { Plugin } from '../../../src/scheduling/types.js';

const ctx = {} as PluginContext;

describe('PluginRegistry', () => {
  it('creates plugins through their factory with name and params', () => {
    const r = new PluginRegistry();
    r.registerPlugin('t', (name, params) => ({ name, params }) as Plugin);
    const p = r.createPlugin('t', 'inst', { x: 1 }, ctx) as Plugin & { params: unknown };
    expect(p.name).to.equal('inst');
    expect(p.params).to.deep.equal({ x: 1 });
    expect(r.hasPlugin('t')).to.equal(true);
  });

  it('refuses duplicate plugin types and strategy names', () => {
    const r = new PluginRegistry();
    r.registerPlugin('t', (name) => ({ name }));
    r.registerStrategy('s', () => ({ name: 's', plugins: [] }));
    for (const f of [() => r.registerPlugin('t', (name) => ({ name })), () => r.registerStrategy('s', () => ({ name: 's', plugins: [] }))]) {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
    }
  });

  it('names the known types when asked for an unknown one', () => {
    const r = new PluginRegistry().registerPlugin('b', (name) => ({ name })).registerPlugin('a', (name) => ({ name }));
    expect(() => r.createPlugin('zzz', 'x', {}, ctx)).to.throw(/unknown plugin type "zzz" \(known: a, b\)/);
    expect(r.pluginTypes()).to.deep.equal(['a', 'b']);
    expect(r.strategy('nope')).to.equal(undefined);
  });
});
