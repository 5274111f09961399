import { expect } from 'chai';
import { presetGraph, STRATEGIES, type PresetInput } from '../../../../src/plugins/presets/presets.js';
import { builtinCatalog } from '../../../../src/plugins/register-builtins.js';
import { validateGraphParameters } from '../../../../src/scheduling/plugin-graph.js';
import { config } from '../../builders.js';

function input(over: Parameters<typeof config>[1] = {}): PresetInput {
  const c = config(2, over);
  return { cacheAware: c.cacheAware, load: c.load, requests: c.requests };
}

describe('shipped presets', () => {
  it('start every profile with the eligibility filters, and every parameter is valid for its plugin', () => {
    for (const s of STRATEGIES) {
      const g = presetGraph(s, input());
      for (const p of g.schedulingProfiles) {
        expect(
          p.plugins.slice(0, 2).map((r) => r.pluginRef),
          `${s}/${p.name}`,
        ).to.deep.equal(['model-subset-filter', 'health-filter']);
      }
      expect(validateGraphParameters(g, builtinCatalog()), s).to.deep.equal([]);
    }
  });

  it('weights the cache-aware scorers from the shorthand knobs', () => {
    const g = presetGraph('cache-aware', input({ cacheAware: { weights: { prefix: 5, queue: 1, kvUsage: 0.5 } } }));
    const refs = g.schedulingProfiles[0]!.plugins;
    const w = Object.fromEntries(refs.filter((r) => r.weight !== undefined).map((r) => [r.pluginRef, r.weight]));
    expect(w).to.deep.equal({ 'prefix-cache': 5, 'queue-scorer': 1, 'kv-usage-scorer': 0.5 });
    expect(refs.map((r) => r.pluginRef)).to.include('imbalance-escape-filter');
    expect(refs.map((r) => r.pluginRef)).to.include('cold-request-placement');
  });

  it('turns optional knobs into plugins only when asked: hotspot, session, token load, cold placement', () => {
    const types = (over: Parameters<typeof config>[1]) => presetGraph('cache-aware', input(over)).plugins.map((p) => p.type);
    expect(types({})).to.not.include.members(['hotspot-replication-filter', 'session-affinity-scorer', 'token-load-scorer']);
    expect(types({ load: { hotspot: { enabled: true } } })).to.include('hotspot-replication-filter');
    expect(types({ requests: { sessionHeader: 'x-s' } })).to.include('session-affinity-scorer');
    expect(types({ load: { tokenLoadWeight: 2 } })).to.include('token-load-scorer');
    expect(types({ cacheAware: { coldRouting: 'scores' } })).to.not.include('cold-request-placement');
  });

  it('auto: four profiles, one auto handler, shared instances', () => {
    const g = presetGraph('auto', input());
    expect(g.schedulingProfiles.map((p) => p.name)).to.deep.equal(['learning', 'load', 'affinity', 'cache-aware']);
    expect(g.plugins.filter((p) => p.type === 'auto-profile-handler')).to.have.length(1);
    expect(g.plugins.filter((p) => p.type === 'prefix-cache')).to.have.length(1);
  });
});
