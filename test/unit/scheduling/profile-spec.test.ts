import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { PluginRegistry, type PluginContext } from '../../../src/scheduling/plugin-registry.js';
import { buildProfile, type ProfileSpec } from '../../../src/scheduling/profile-spec.js';
import type { Plugin } from '../../../src/scheduling/types.js';

const ctx = {} as PluginContext;

function registry(): PluginRegistry {
  return new PluginRegistry()
    .registerPlugin('filter', (name) => ({ name, filter: (_s: unknown, c: unknown) => c }) as Plugin)
    .registerPlugin('scorer', (name) => ({ name, score: () => [] }) as Plugin)
    .registerPlugin('picker', (name) => ({ name, pick: () => ({ order: [0], reason: 'load' }) }) as Plugin)
    .registerPlugin('multi', (name) => ({ name, score: () => [], onRouted: () => {}, onCompleted: () => {}, onEndpointsChanged: () => {} }) as Plugin)
    .registerPlugin('inert', (name) => ({ name }));
}

function badConfig(spec: ProfileSpec, withDefault = true): string {
  try {
    buildProfile(spec, registry(), ctx, withDefault ? { type: 'picker', name: 'default-picker' } : undefined);
  } catch (e) {
    if (isRouterError(e, 'BAD_CONFIG')) return e.message;
    throw e;
  }
  throw new Error('expected BAD_CONFIG');
}

describe('buildProfile', () => {
  it('files each instance under every extension point it implements, in spec order', () => {
    const { profile, plugins } = buildProfile(
      { name: 'p', plugins: [{ type: 'filter', name: 'f1' }, { type: 'multi', weight: 3 }, { type: 'filter', name: 'f2' }, { type: 'scorer' }] },
      registry(),
      ctx,
      { type: 'picker' },
    );
    expect(profile.filters.map((f) => f.name)).to.deep.equal(['f1', 'f2']);
    expect(profile.scorers.map((s) => [s.scorer.name, s.weight])).to.deep.equal([['multi', 3], ['scorer', 1]]);
    expect(profile.routedHooks.map((h) => h.name)).to.deep.equal(['multi']);
    expect(profile.completedHooks.map((h) => h.name)).to.deep.equal(['multi']);
    expect(profile.picker.name).to.equal('picker');
    expect(plugins.map((p) => p.name)).to.deep.equal(['f1', 'multi', 'f2', 'scorer', 'picker']);
  });

  it('uses the spec picker over the default', () => {
    const { profile } = buildProfile({ name: 'p', plugins: [{ type: 'picker', name: 'mine' }] }, registry(), ctx, { type: 'picker', name: 'def' });
    expect(profile.picker.name).to.equal('mine');
  });

  const bad: Array<[string, ProfileSpec, boolean, RegExp]> = [
    ['duplicate names', { name: 'p', plugins: [{ type: 'filter' }, { type: 'filter' }] }, true, /duplicate plugin name "filter"/],
    ['negative weight', { name: 'p', plugins: [{ type: 'scorer', weight: -1 }] }, true, /weight/],
    ['non-finite weight', { name: 'p', plugins: [{ type: 'scorer', weight: Number.NaN }] }, true, /weight/],
    ['two pickers', { name: 'p', plugins: [{ type: 'picker', name: 'a' }, { type: 'picker', name: 'b' }] }, true, /more than one picker/],
    ['no picker and no default', { name: 'p', plugins: [{ type: 'filter' }] }, false, /no picker/],
    ['plugin with no role', { name: 'p', plugins: [{ type: 'inert' }] }, true, /implements no extension point/],
    ['unknown type', { name: 'p', plugins: [{ type: 'nope' }] }, true, /unknown plugin type/],
  ];
  for (const [name, spec, withDefault, re] of bad) {
    it(`rejects ${name}`, () => {
      expect(badConfig(spec, withDefault)).to.match(re);
    });
  }
});
