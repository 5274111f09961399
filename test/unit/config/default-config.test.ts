import { expect } from 'chai';
import { defaultConfig, TEST_ENDPOINT_ADDRESSES } from '../../../src/config/default-config.js';
import { problemsOf } from './config-helpers.js';

describe('config/default-config', () => {
  it('is a valid test baseline: ephemeral ports, polling off, four loopback engines', () => {
    const c = defaultConfig();
    expect(c.server.grpcAddress).to.equal('127.0.0.1:0');
    expect(c.server.adminAddress).to.equal('127.0.0.1:0');
    expect(c.engineMetrics.enabled).to.equal(false);
    expect(c.endpoints.map((e) => e.address)).to.deep.equal(TEST_ENDPOINT_ADDRESSES);
    expect(c.strategy).to.equal('cache-aware');
  });

  it('merges partial overrides deeply and replaces arrays', () => {
    const c = defaultConfig({
      strategy: 'random',
      dataLayer: { traffic: { windowMs: 5000 } },
      endpoints: [{ address: '10.0.0.1:1', models: ['m'] }],
    });
    expect(c.strategy).to.equal('random');
    expect(c.dataLayer.traffic).to.deep.equal({ windowMs: 5000, keyChars: 256, minKeyChars: 64 });
    expect(c.endpoints).to.deep.equal([{ address: '10.0.0.1:1', pool: 'default', models: ['m'] }]);
  });

  it('validates overrides', () => {
    const problems = problemsOf(() => defaultConfig({ fallbacks: -3, endpoints: [] }));
    expect(problems.map((p) => p.slice(0, p.indexOf(':')))).to.have.members(['fallbacks', 'endpoints']);
  });
});
