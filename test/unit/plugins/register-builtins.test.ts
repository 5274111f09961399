import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { registerBuiltins } from '../../../src/plugins/register-builtins.js';
import { PluginRegistry } from '../../../src/scheduling/plugin-registry.js';

describe('registerBuiltins', () => {
  it('registers every core plugin type and strategy', () => {
    const r = registerBuiltins(new PluginRegistry());
    expect(r.pluginTypes()).to.include.members([
      'health-filter', 'imbalance-escape-filter', 'kv-usage-scorer', 'max-score-picker', 'model-subset-filter',
      'prefix-cache', 'prefix-hash-picker', 'queue-scorer', 'random-picker', 'round-robin-picker',
    ]);
    expect(r.strategyNames()).to.include.members(['cache-aware', 'least-request', 'prefix-hash', 'random', 'round-robin']);
  });

  it('cannot register the built-ins twice on one registry', () => {
    const r = registerBuiltins(new PluginRegistry());
    let err: unknown;
    try {
      registerBuiltins(r);
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
  });
});
