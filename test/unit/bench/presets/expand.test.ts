import { expect } from 'chai';
import { routerConfigObject } from '../../../../bench/contenders/router-config.js';
import { expandPreset } from '../../../../bench/presets/expand.js';
import { PRESETS } from '../../../../bench/presets/index.js';
import type { PresetSpec } from '../../../../bench/presets/types.js';
import { buildWorkload } from '../../../../bench/workloads/scenario.js';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { parseConfig } from '../../../../src/config/parse-config.js';

const preset: PresetSpec = {
  name: 'p',
  description: '',
  seed: 1,
  model: 'm',
  estimatedMinutes: 1,
  budget: { requestTimeoutMs: 1, maxRunMs: 1 },
  blocks: [
    {
      name: 'b',
      engines: { label: 'e', count: 2, flags: {}, rationale: '' },
      scenarios: [
        {
          kind: 'sharing-ratio',
          label: 's',
          ratio: 0.5,
          promptTokens: 10,
          groups: 2,
          requests: 4,
          outputTokens: 1,
          arrival: { kind: 'constant', qps: 1 },
        },
      ],
      qpsSweep: [2, 4],
      contenders: [
        { kind: 'cacheroute', label: 'ca', strategy: 'cache-aware', routerOverrides: { dataLayer: { traffic: { windowMs: 5000 } } } },
        { kind: 'envoy-only', label: 'env', lb: 'round-robin' },
      ],
      contenderMaxQps: { env: 2 },
      routerOverrides: { engineMetrics: { enabled: false }, dataLayer: { traffic: { windowMs: 1000, keyChars: 9 } } },
    },
  ],
};

describe('bench/presets', () => {
  it('expands blocks into scenario × rate × contender, honouring rate caps', () => {
    const e = expandPreset(preset);
    expect(e.map((x) => x.id)).to.deep.equal(['b/s@2/ca', 'b/s@2/env', 'b/s@4/ca']);
    expect(e.map((x) => x.qps)).to.deep.equal([2, 2, 4]);
    const s = e[2]?.scenario;
    expect(s?.kind === 'sharing-ratio' ? s.arrival.qps : undefined).to.equal(4);
  });

  it('merges block router overrides under the contender’s own', () => {
    const c = expandPreset(preset)[0]?.contender;
    expect(c?.kind === 'cacheroute' ? c.routerOverrides : undefined).to.deep.equal({
      engineMetrics: { enabled: false },
      dataLayer: { traffic: { windowMs: 5000, keyChars: 9 } },
    });
  });

  it('every registered preset expands with unique ids and buildable workloads', () => {
    const names = new Set<string>();
    for (const p of PRESETS) {
      expect(names.has(p.name), p.name).to.equal(false);
      names.add(p.name);
      const runs = expandPreset(p);
      expect(runs.length, p.name).to.be.greaterThan(0);
      const scenarios = new Map(runs.map((r) => [JSON.stringify(r.scenario), r.scenario] as const));
      for (const s of scenarios.values()) {
        const w = buildWorkload(s, p.seed, REPO_ROOT);
        expect(w.requests.length, `${p.name}/${s.label}`).to.be.greaterThan(0);
      }
    }
  });

  it('every cacheroute contender of every preset gets a router config the router accepts', () => {
    for (const p of PRESETS) {
      for (const r of expandPreset(p)) {
        if (r.contender.kind !== 'cacheroute') continue;
        const engines = Array.from({ length: r.engines.count }, (_, i) => ({
          id: `e${i}`,
          url: `http://127.0.0.1:${8100 + i}`,
          port: 8100 + i,
          address: `127.0.0.1:${8100 + i}`,
        }));
        const obj = routerConfigObject({
          engines,
          strategy: r.contender.strategy,
          seed: 1,
          grpcAddress: '127.0.0.1:0',
          adminAddress: '127.0.0.1:0',
          ...(r.contender.routerOverrides ? { overrides: r.contender.routerOverrides } : {}),
        });
        expect(() => parseConfig(obj), `${p.name}: ${r.id}`).to.not.throw();
      }
    }
  });
});
