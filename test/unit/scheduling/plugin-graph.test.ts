import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { definePlugin, PluginCatalog } from '../../../src/framework/plugin-api.js';
import { buildPluginGraph, type GraphSpec } from '../../../src/scheduling/plugin-graph.js';
import type { Plugin, Profile, ProfileHandler } from '../../../src/framework/types.js';
import { num, section } from '../../../src/util/schema.js';
import { fakeType, graphHandle } from '../builders.js';

function catalog(): PluginCatalog {
  return new PluginCatalog()
    .register(fakeType('filter', (name) => ({ name, filter: (_s: unknown, c: unknown) => c }) as Plugin))
    .register(fakeType('scorer', (name) => ({ name, score: () => [] }) as Plugin))
    .register(fakeType('picker', (name) => ({ name, pick: () => ({ order: [0], reason: 'load' }) }) as Plugin))
    .register(
      fakeType(
        'multi',
        (name) => ({ name, score: () => [], onRouted: () => {}, onCompleted: () => {}, onEndpointsChanged: () => {} }) as Plugin,
      ),
    )
    .register(fakeType('inert', (name) => ({ name })))
    .register(
      fakeType(
        'handler',
        (name) => ({ name, pickProfile: (_s: unknown, ps: ReadonlyMap<string, Profile>) => ps.get('b')! }) as ProfileHandler,
      ),
    )
    .register(
      definePlugin({
        type: 'weighted',
        description: 'has a parameter',
        parameters: section({ weight: num({ min: 0 }).default(1) }),
        create: (name, p) => ({ name, weight: p.weight, score: () => [] }) as Plugin,
      }),
    );
}

const ref = (pluginRef: string, weight?: number) => (weight === undefined ? { pluginRef } : { pluginRef, weight });

function badConfig(spec: GraphSpec): string {
  try {
    buildPluginGraph(spec, catalog(), graphHandle());
  } catch (e) {
    if (isRouterError(e, 'BAD_CONFIG')) return e.message;
    throw e;
  }
  throw new Error('expected BAD_CONFIG');
}

describe('buildPluginGraph', () => {
  it('files each referenced instance under every extension point it implements, in profile order', () => {
    const g = buildPluginGraph(
      {
        plugins: [
          { type: 'filter', name: 'f1' },
          { type: 'multi' },
          { type: 'filter', name: 'f2' },
          { type: 'scorer' },
          { type: 'picker' },
        ],
        schedulingProfiles: [{ name: 'p', plugins: [ref('f1'), ref('multi', 3), ref('f2'), ref('scorer'), ref('picker')] }],
      },
      catalog(),
      graphHandle(),
    );
    const profile = g.profiles.get('p')!;
    expect(profile.filters.map((f) => f.name)).to.deep.equal(['f1', 'f2']);
    expect(profile.scorers.map((s) => [s.scorer.name, s.weight])).to.deep.equal([
      ['multi', 3],
      ['scorer', 1],
    ]);
    expect(g.routedHooks.map((h) => h.name)).to.deep.equal(['multi']);
    expect(g.completedHooks.map((h) => h.name)).to.deep.equal(['multi']);
    expect(profile.picker.name).to.equal('picker');
    expect(g.instances.map((i) => i.plugin.name)).to.deep.equal(['f1', 'multi', 'f2', 'scorer', 'picker']);
    expect(g.handler.pickProfile({} as never, g.profiles)).to.equal(profile);
  });

  it('shares one instance between profiles (with different weights) and runs the hooks of unreferenced plugins too', () => {
    const g = buildPluginGraph(
      {
        plugins: [{ type: 'multi', name: 'm' }, { type: 'picker' }, { type: 'handler' }],
        schedulingProfiles: [
          { name: 'a', plugins: [ref('m', 1), ref('picker')] },
          { name: 'b', plugins: [ref('m', 5), ref('picker')] },
        ],
      },
      catalog(),
      graphHandle(),
    );
    expect(g.profiles.get('a')!.scorers[0]!.scorer).to.equal(g.profiles.get('b')!.scorers[0]!.scorer);
    expect(g.profiles.get('b')!.scorers[0]!.weight).to.equal(5);
    expect(g.handler.name).to.equal('handler');
    expect(g.routedHooks.map((h) => h.name)).to.deep.equal(['m']);
  });

  it("validates each instance's parameters against its type's schema, with the field path", () => {
    const msg = badConfig({
      plugins: [
        { type: 'picker' },
        { type: 'weighted', parameters: { weight: 'x' } },
        { type: 'weighted', name: 'w2', parameters: { wieght: 1 } },
      ],
      schedulingProfiles: [{ name: 'p', plugins: [ref('picker')] }],
    });
    expect(msg).to.contain('plugins[1].parameters.weight: expected number >= 0, got "x"');
    expect(msg).to.contain('plugins[2].parameters.wieght: unknown field (did you mean weight?)');
  });

  const bad: Array<[string, GraphSpec, RegExp]> = [
    [
      'duplicate names',
      { plugins: [{ type: 'filter' }, { type: 'filter' }], schedulingProfiles: [] },
      /plugins\[1\]\.name: duplicate of plugins\[0\]/,
    ],
    [
      'unknown type',
      { plugins: [{ type: 'nope' }], schedulingProfiles: [] },
      /plugins\[0\]\.type: unknown plugin type "nope" \(known: filter, handler/,
    ],
    [
      'dangling reference',
      { plugins: [{ type: 'picker' }], schedulingProfiles: [{ name: 'p', plugins: [ref('ghost'), ref('picker')] }] },
      /schedulingProfiles\[0\]\.plugins\[0\]\.pluginRef: no plugin named "ghost"/,
    ],
    [
      'two pickers',
      {
        plugins: [
          { type: 'picker', name: 'a' },
          { type: 'picker', name: 'b' },
        ],
        schedulingProfiles: [{ name: 'p', plugins: [ref('a'), ref('b')] }],
      },
      /a second picker/,
    ],
    [
      'no picker',
      { plugins: [{ type: 'filter' }], schedulingProfiles: [{ name: 'p', plugins: [ref('filter')] }] },
      /schedulingProfiles\[0\]\.plugins: no picker/,
    ],
    [
      'plugin with no role',
      { plugins: [{ type: 'inert' }, { type: 'picker' }], schedulingProfiles: [{ name: 'p', plugins: [ref('inert'), ref('picker')] }] },
      /is not a filter, scorer, placement or picker/,
    ],
    [
      'weight on a non-scorer',
      { plugins: [{ type: 'picker' }], schedulingProfiles: [{ name: 'p', plugins: [ref('picker', 2)] }] },
      /weight: "picker" is not a scorer/,
    ],
    [
      'several profiles, no handler',
      {
        plugins: [{ type: 'picker' }],
        schedulingProfiles: [
          { name: 'a', plugins: [ref('picker')] },
          { name: 'b', plugins: [ref('picker')] },
        ],
      },
      /need a profile handler/,
    ],
    ['no profile', { plugins: [{ type: 'picker' }], schedulingProfiles: [] }, /at least one profile/],
  ];
  for (const [name, spec, re] of bad) {
    it(`rejects ${name}`, () => {
      expect(badConfig(spec)).to.match(re);
    });
  }
});
