import { expect } from 'chai';
import { routerConfigObject } from '../../../../bench/contenders/router-config.js';
import { expandPreset } from '../../../../bench/presets/expand.js';
import { LOAD_AUTO, LOAD_HOTSPOT, LOAD_PRESETS, LOAD_STALENESS } from '../../../../bench/presets/load-signals.js';
import { parseConfig } from '../../../../src/config/parse-config.js';

describe('load/bench presets', () => {
  it('expand into unique runs whose router configs validate', () => {
    for (const p of LOAD_PRESETS) {
      const runs = expandPreset(p);
      expect(new Set(runs.map((r) => r.id)).size).to.equal(runs.length);
      for (const r of runs) {
        if (r.contender.kind !== 'cacheroute') continue;
        const engines = Array.from({ length: r.engines.count }, (_, i) => ({ id: `e${i}`, url: `http://127.0.0.1:${8100 + i}`, port: 8100 + i, address: `127.0.0.1:${8100 + i}` }));
        const obj = routerConfigObject({ engines, strategy: r.contender.strategy, seed: 1, grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0', ...(r.contender.routerOverrides ? { overrides: r.contender.routerOverrides } : {}) });
        expect(() => parseConfig(obj), r.id).to.not.throw();
      }
    }
  });

  it('covers the experiments the load work must prove', () => {
    const hot = expandPreset(LOAD_HOTSPOT);
    expect(hot.every((r) => r.engines.count === 8)).to.equal(true);
    expect(hot.map((r) => r.contender.label)).to.include.members(['cacheroute-prefix-hash', 'cacheroute-cache-aware']);
    const stale = expandPreset(LOAD_STALENESS);
    const polls = stale.map((r) => (r.contender.kind === 'cacheroute' ? (r.contender.routerOverrides?.engineMetrics as { pollIntervalMs?: number } | undefined)?.pollIntervalMs : undefined));
    expect(new Set(polls)).to.include.members([50, 500, 5000]);
    const frozen = stale.filter((r) => r.block === 'frozen');
    expect(frozen.length).to.be.greaterThan(0);
    expect(frozen.every((r) => r.engineActions?.[0]?.path === '/admin/freeze-metrics' && r.engineActions[0].undo === '/admin/unfreeze-metrics')).to.equal(true);
    const auto = expandPreset(LOAD_AUTO);
    expect(new Set(auto.map((r) => r.scenario.label))).to.deep.equal(new Set(['sharing-0', 'sharing-90']));
  });
});
