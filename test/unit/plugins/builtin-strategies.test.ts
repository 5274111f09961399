import { expect } from 'chai';
import { cacheAwareProfile, leastRequestProfile, prefixHashProfile, randomProfile, roundRobinProfile } from '../../../src/plugins/builtin-strategies.js';
import { config } from '../scheduling/builders.js';

describe('built-in strategy profiles', () => {
  it('start every profile with the eligibility filters', () => {
    for (const spec of [roundRobinProfile(), randomProfile(), leastRequestProfile(), prefixHashProfile(), cacheAwareProfile(config(2))]) {
      expect(spec.plugins.slice(0, 2).map((p) => p.type), spec.name).to.deep.equal(['model-subset-filter', 'health-filter']);
    }
  });

  it('weights the cache-aware scorers from config', () => {
    const spec = cacheAwareProfile(config(2, { cacheAware: { weights: { prefix: 5, queue: 1, kvUsage: 0.5 } } }));
    const w = Object.fromEntries(spec.plugins.filter((p) => p.weight !== undefined).map((p) => [p.type, p.weight]));
    expect(w).to.deep.equal({ 'prefix-cache': 5, 'queue-scorer': 1, 'kv-usage-scorer': 0.5 });
    expect(spec.plugins.map((p) => p.type)).to.include('imbalance-escape-filter');
  });
});
