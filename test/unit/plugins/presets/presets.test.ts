import { expect } from 'chai';
import { PRESET_NAMES, PRESETS } from '../../../../src/plugins/presets/presets.js';
import { presetGraph } from '../../../../src/plugins/presets/strategy.js';
import { builtinCatalog } from '../../../../src/plugins/register-builtins.js';
import { validateGraphParameters } from '../../../../src/scheduling/plugin-graph.js';

describe('shipped presets (data)', () => {
  it('start every profile with the eligibility filters, and every parameter is valid for its plugin', () => {
    for (const s of PRESET_NAMES) {
      const g = presetGraph(s);
      for (const p of g.schedulingProfiles) {
        expect(
          p.plugins.slice(0, 2).map((r) => r.pluginRef),
          `${s}/${p.name}`,
        ).to.deep.equal(['model-subset-filter', 'health-filter']);
      }
      expect(validateGraphParameters(g, builtinCatalog()), s).to.deep.equal([]);
    }
  });

  it('every plugin type is registered and every profile reference names an instance of the preset', () => {
    const catalog = builtinCatalog();
    for (const s of PRESET_NAMES) {
      const p = PRESETS[s];
      const names = p.plugins.map((x) => x.name ?? x.type);
      for (const x of p.plugins) expect(catalog.has(x.type), `${s}: ${x.type}`).to.equal(true);
      for (const prof of p.schedulingProfiles) for (const r of prof.plugins) expect(names, `${s}/${prof.name}`).to.include(r.pluginRef);
      expect(p.description.length, s).to.be.greaterThan(10);
    }
  });

  it('leaves the optional plugins out by default: hotspot, session, token load', () => {
    const types = presetGraph('cache-aware').plugins.map((p) => p.type);
    expect(types).to.not.include.members(['hotspot-replication-filter', 'session-affinity-scorer', 'token-load-scorer']);
    expect(types).to.include.members(['imbalance-escape-filter', 'cold-request-placement', 'index-calibration']);
    const refs = presetGraph('cache-aware').schedulingProfiles[0]!.plugins.map((r) => r.pluginRef);
    expect(refs).to.not.include.members(['hotspot-replication-filter', 'session-affinity-scorer', 'token-load-scorer']);
  });

  it('auto: four profiles, one auto handler, shared instances', () => {
    const g = presetGraph('auto');
    expect(g.schedulingProfiles.map((p) => p.name)).to.deep.equal(['learning', 'load', 'affinity', 'cache-aware']);
    expect(g.plugins.filter((p) => p.type === 'auto-profile-handler')).to.have.length(1);
    expect(g.plugins.filter((p) => p.type === 'prefix-cache')).to.have.length(1);
  });

  it('precise-cache-aware: precise-prefix-cache under the name prefix-cache, without index-calibration', () => {
    const g = presetGraph('precise-cache-aware');
    expect(g.plugins.find((p) => p.name === 'prefix-cache')?.type).to.equal('precise-prefix-cache');
    expect(g.plugins.map((p) => p.type)).to.not.include.members(['prefix-cache', 'index-calibration']);
  });
});
