import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { registerBuiltins } from '../../../src/plugins/register-builtins.js';
import { PluginCatalog } from '../../../src/framework/plugin-api.js';

describe('registerBuiltins', () => {
  it('registers every core plugin type', () => {
    const r = registerBuiltins(new PluginCatalog());
    expect(r.typeIds()).to.include.members([
      'health-filter',
      'imbalance-escape-filter',
      'kv-usage-scorer',
      'max-score-picker',
      'model-subset-filter',
      'prefix-cache',
      'prefix-hash-picker',
      'queue-scorer',
      'random-picker',
      'round-robin-picker',
      'cold-request-placement',
      'auto-profile-handler',
      'single-profile-handler',
      'index-calibration',
    ]);
  });

  it('every built-in has a description and accepts an empty parameter mapping (all defaults)', () => {
    for (const t of registerBuiltins(new PluginCatalog()).all()) {
      expect(t.description.length, t.type).to.be.greaterThan(20);
      expect(t.parameters.safeParse({}).success, t.type).to.equal(true);
    }
  });

  it('cannot register the built-ins twice on one catalog', () => {
    const r = registerBuiltins(new PluginCatalog());
    let err: unknown;
    try {
      registerBuiltins(r);
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
  });
});
