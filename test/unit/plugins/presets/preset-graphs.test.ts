/**
 * The presets as data build the same graphs as the `cacheAware:` / `load:` shorthand did:
 * for every case recorded at 9d75293, the last main commit with the shorthand
 * (test/fixtures/presets/graphs-9d75293.json, the old configuration and the graph it
 * expanded to, every parameter filled in by its plugin's schema), the `strategy:` form of
 * the same configuration gives the same instances in the same order, the same effective
 * parameters and the same profile weights. A weight-0
 * reference counts as no reference (it adds nothing to the sum); the session scorer gains
 * the `header` parameter that replaced `requests.sessionHeader`. The same recording made at
 * 3026b14 differs only in ttft-model's parameters (expiryFactor gone, prefillPenalty added
 * by 3476a59), so every other preset is unchanged since then too. The fixture's predicted-ttft
 * and ttft-model parameters carry the future-reuse terms and the waiting floor added since
 * (and their load scaling, issue 27). auto's three cases (auto, auto-8, auto-weights-zero) carry
 * the graph of docs/decisions/0350 (its reuse and learning profiles pick by predicted TTFT),
 * recorded when that decision landed; their pinned decisions (test/fixtures/decisions) too.
 */
import { expect } from 'chai';
import { defaultConfig, type ConfigOverrides } from '../../../../src/config/default-config.js';
import { builtinCatalog } from '../../../../src/plugins/register-builtins.js';
import type { RouterConfig } from '../../../../src/config/types.js';
import { caseConfig, PRESET_CASES, RECORDED_GRAPHS, type RecordedGraph } from './preset-cases.js';

const EXTRA: Readonly<Record<string, ConfigOverrides>> = {
  'predicted-ttft': { strategy: 'predicted-ttft' },
  'sticky-until-saturated': { strategy: 'sticky-until-saturated' },
  'cache-aware-precise': {
    strategy: { name: 'precise-cache-aware', plugins: { 'prefix-cache': { blockChars: 32, mode: 'approximate', maxBlocks: 64 } } },
  },
  'least-request-session': {
    strategy: {
      name: 'least-request',
      weights: { 'session-affinity-scorer': 4 },
      plugins: { 'session-affinity-scorer': { header: 'x-session', ttlMs: 1000 } },
    },
  },
  'cache-aware-weights': { strategy: { name: 'cache-aware', weights: { 'prefix-cache': 5, 'queue-scorer': 1, 'kv-usage-scorer': 0.5 } } },
  'auto-weights-zero': { strategy: { name: 'auto', weights: { affinity: { 'prefix-cache': 0 } } } },
};

/** Header parameters the new form adds (they replace requests.sessionHeader). */
const ADDED: Readonly<Record<string, Record<string, Record<string, unknown>>>> = {
  'cache-aware-session': { 'session-affinity-scorer': { header: 'x-session' } },
  'least-request-session': { 'session-affinity-scorer': { header: 'x-session' } },
};

function effective(c: Pick<RouterConfig, 'plugins' | 'schedulingProfiles'>): RecordedGraph {
  const catalog = builtinCatalog();
  return {
    plugins: c.plugins.map((p) => ({
      type: p.type,
      name: p.name ?? p.type,
      parameters: catalog.get(p.type)!.parameters.parse(p.parameters ?? {}) as Record<string, unknown>,
    })),
    schedulingProfiles: c.schedulingProfiles.map((s) => ({ name: s.name, plugins: s.plugins.map((r) => ({ ...r })) })),
  };
}

function expected(name: string, g: RecordedGraph): RecordedGraph {
  const added = ADDED[name] ?? {};
  return {
    plugins: g.plugins.map((p) => ({ ...p, parameters: { ...p.parameters, ...(added[p.name] ?? {}) } })),
    schedulingProfiles: g.schedulingProfiles.map((s) => ({ name: s.name, plugins: s.plugins.filter((r) => r.weight !== 0) })),
  };
}

describe('presets as data build the graphs the shorthand built (9d75293)', () => {
  const cases = new Map<string, RouterConfig>();
  for (const c of PRESET_CASES) cases.set(c.name, caseConfig(c));
  for (const [name, over] of Object.entries(EXTRA)) cases.set(name, defaultConfig(over));

  it('covers every recorded case', () => {
    expect([...cases.keys()].sort()).to.deep.equal(Object.keys(RECORDED_GRAPHS).sort());
  });

  for (const [name, recorded] of Object.entries(RECORDED_GRAPHS)) {
    it(`${name}: same instances, effective parameters and weights`, () => {
      const c = cases.get(name);
      expect(c, 'case written in the new form').to.not.equal(undefined);
      expect(effective(c!)).to.deep.equal(expected(name, recorded.graph));
    });
  }
});
