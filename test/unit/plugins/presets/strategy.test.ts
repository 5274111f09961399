/** `strategy:` adjustments (weights, plugins) and the keys that moved out of the shorthand sections. */
import { expect } from 'chai';
import { parseConfig } from '../../../../src/config/parse-config.js';
import { MINIMAL, problemsOf } from '../../config/config-helpers.js';

function refsOf(c: ReturnType<typeof parseConfig>, profile = 0): Record<string, number | undefined> {
  return Object.fromEntries(c.schedulingProfiles[profile]!.plugins.map((r) => [r.pluginRef, r.weight]));
}

function paramsOf(c: ReturnType<typeof parseConfig>, name: string): Record<string, unknown> | undefined {
  return c.plugins.find((p) => (p.name ?? p.type) === name)?.parameters as Record<string, unknown> | undefined;
}

describe('strategy: a preset, adjusted', () => {
  it('a name and {name} give the same graph, labelled with the preset', () => {
    const a = parseConfig({ ...MINIMAL, strategy: 'cache-aware' });
    const b = parseConfig({ ...MINIMAL, strategy: { name: 'cache-aware' } });
    expect(b.plugins).to.deep.equal(a.plugins);
    expect(b.schedulingProfiles).to.deep.equal(a.schedulingProfiles);
    expect(b.strategy).to.equal('cache-aware');
    expect(parseConfig(MINIMAL).strategy).to.equal('cache-aware');
  });

  it('weights override the scorers; 0 drops a scorer from the profile, a weight turns an optional scorer on', () => {
    const c = parseConfig({
      ...MINIMAL,
      strategy: { name: 'cache-aware', weights: { 'prefix-cache': 5, 'kv-usage-scorer': 0, 'token-load-scorer': 2 } },
    });
    const w = refsOf(c);
    expect(w['prefix-cache']).to.equal(5);
    expect(w['queue-scorer']).to.equal(2);
    expect(w).to.not.have.property('kv-usage-scorer');
    expect(w['token-load-scorer']).to.equal(2);
    expect(c.plugins.map((p) => p.type)).to.include('token-load-scorer');
  });

  it('in auto a weight applies to every profile with the scorer, or to one profile by name', () => {
    const weightOf = (c: ReturnType<typeof parseConfig>) =>
      c.schedulingProfiles.map((p) => p.plugins.find((r) => r.pluginRef === 'prefix-cache')?.weight);
    const all = parseConfig({ ...MINIMAL, strategy: { name: 'auto', weights: { 'prefix-cache': 4 } } });
    expect(weightOf(all)).to.deep.equal([4, undefined, 4, 4]);
    const one = parseConfig({ ...MINIMAL, strategy: { name: 'auto', weights: { 'cache-aware': { 'prefix-cache': 4 } } } });
    expect(weightOf(one)).to.deep.equal([1, undefined, 1, 4]);
  });

  it("plugins: parameters merged over the preset's, an optional plugin named = on, false = left out", () => {
    const c = parseConfig({
      ...MINIMAL,
      strategy: {
        name: 'cache-aware',
        plugins: {
          'queue-scorer': { signal: 'prefill' },
          'hotspot-replication-filter': {},
          'session-affinity-scorer': { header: 'X-Session-Id' },
          'cold-request-placement': false,
        },
      },
    });
    expect(paramsOf(c, 'queue-scorer')).to.deep.equal({ softQueue: 32, signal: 'prefill' });
    expect(paramsOf(c, 'session-affinity-scorer')).to.deep.equal({ header: 'X-Session-Id' });
    const w = refsOf(c);
    expect(w).to.have.property('hotspot-replication-filter');
    expect(w['session-affinity-scorer']).to.equal(10);
    expect(w).to.not.have.property('cold-request-placement');
    expect(c.plugins.map((p) => p.type)).to.not.include('cold-request-placement');
  });

  it('names every unknown instance, profile or non-scorer weight with its path and what the preset has', () => {
    const lines = problemsOf(() =>
      parseConfig({
        ...MINIMAL,
        strategy: {
          name: 'cache-aware',
          weights: { prefix: 3, 'max-score-picker': 1, learning: { queue: 1 } },
          plugins: { 'imbalance-escape': { absThreshold: 4 } },
        },
      }),
    );
    expect(lines.join('\n')).to.match(
      /strategy\.plugins\.imbalance-escape: no plugin named "imbalance-escape" \(the cache-aware preset has: .*imbalance-escape-filter/,
    );
    expect(lines.join('\n')).to.contain('strategy.weights.prefix: no plugin named "prefix"');
    expect(lines.join('\n')).to.contain('strategy.weights.max-score-picker: "max-score-picker" is not a scorer in the cache-aware preset');
    expect(lines.join('\n')).to.contain('strategy.weights.learning: no profile named "learning"');
  });

  it("checks the parameters with the plugin's own schema and reports them at strategy.plugins.<name>", () => {
    const lines = problemsOf(() =>
      parseConfig({
        ...MINIMAL,
        strategy: {
          name: 'cache-aware',
          plugins: { 'hotspot-replication-filter': { lowWater: 4, highWater: 4 }, 'imbalance-escape-filter': { relThreshold: 0.5 } },
        },
      }),
    );
    expect(
      lines.some((l) => l.startsWith('strategy.plugins.hotspot-replication-filter.lowWater: must be below highWater')),
      lines.join(' | '),
    ).to.equal(true);
    expect(
      lines.some((l) => l.startsWith('strategy.plugins.imbalance-escape-filter.relThreshold')),
      lines.join(' | '),
    ).to.equal(true);
    const auto = problemsOf(() =>
      parseConfig({ ...MINIMAL, strategy: { name: 'auto', plugins: { auto: { lowReuse: 0.8, highReuse: 0.4 } } } }),
    );
    expect(auto.join()).to.contain('strategy.plugins.auto.lowReuse: must not exceed highReuse');
  });

  it('rejects a bad shape with field paths', () => {
    expect(problemsOf(() => parseConfig({ ...MINIMAL, strategy: 'fastest' })).join()).to.contain('strategy: expected one of');
    expect(
      problemsOf(() => parseConfig({ ...MINIMAL, strategy: { name: 'cache-aware', weights: { 'prefix-cache': -1 } } })).join(),
    ).to.contain('strategy.weights.prefix-cache');
    expect(
      problemsOf(() => parseConfig({ ...MINIMAL, strategy: { name: 'cache-aware', plugins: { 'queue-scorer': true } } })).join(),
    ).to.contain('strategy.plugins.queue-scorer: expected a mapping of parameters, or false');
    expect(problemsOf(() => parseConfig({ ...MINIMAL, strategy: { name: 'cache-aware', wieghts: {} } })).join()).to.contain(
      'strategy.wieghts',
    );
  });
});

describe('moved keys: cacheAware:, load:, requests.sessionHeader', () => {
  it('each key is an error naming its new place, reported with the other problems', () => {
    const lines = problemsOf(() =>
      parseConfig({
        ...MINIMAL,
        requests: { sessionHeader: 'x-session-id' },
        cacheAware: { weights: { prefix: 5 }, imbalance: { absThreshold: 8 }, preciseIndex: { mode: 'precise' }, coldRouting: 'scores' },
        load: { unit: 'tokens', hotspot: { enabled: true, highWater: 3 }, outputTokensPrior: 100, auto: { loadMode: 'least-loaded' } },
        fallbacks: -1,
      }),
    );
    const text = lines.join('\n');
    for (const want of [
      'requests.sessionHeader: moved to strategy.plugins.session-affinity-scorer.header',
      'cacheAware.weights.prefix: moved to strategy.weights.prefix-cache',
      'cacheAware.imbalance.absThreshold: moved to strategy.plugins.imbalance-escape-filter.absThreshold',
      'cacheAware.preciseIndex.mode: moved to strategy: {name: precise-cache-aware',
      'cacheAware.coldRouting: moved to strategy.plugins.cold-request-placement: false',
      'load.unit: moved to the `unit` parameter of each load-aware plugin',
      'load.hotspot.enabled: moved to strategy.plugins.hotspot-replication-filter: {}',
      'load.hotspot.highWater: moved to strategy.plugins.hotspot-replication-filter.highWater',
      'load.outputTokensPrior: moved to dataLayer.tokenLoad.outputTokensPrior',
      'load.auto.loadMode: moved to an explicit plugins + schedulingProfiles graph',
      'fallbacks',
    ]) {
      expect(text, want).to.contain(want);
    }
    expect(text).to.not.contain('unknown field');
  });

  it('the data-layer settings have their own section', () => {
    const c = parseConfig({ ...MINIMAL, dataLayer: { tokenLoad: { outputTokensPrior: 100 }, traffic: { windowMs: 10_000 } } });
    expect(c.dataLayer.tokenLoad).to.deep.equal({ outputTokensPrior: 100, outputTokensAlpha: 0.1 });
    expect(c.dataLayer.traffic).to.deep.equal({ windowMs: 10_000, keyChars: 256, minKeyChars: 64 });
    expect(problemsOf(() => parseConfig({ ...MINIMAL, dataLayer: { traffic: { windowMs: 10 } } })).join()).to.contain(
      'dataLayer.traffic.windowMs',
    );
  });
});
