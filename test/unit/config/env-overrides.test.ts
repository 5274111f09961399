import { expect } from 'chai';
import { applyEnvOverrides, ENV_OVERRIDES } from '../../../src/config/env-overrides.js';
import { parseConfig } from '../../../src/config/parse-config.js';
import { MINIMAL, problemsOf } from './config-helpers.js';

describe('config/env-overrides', () => {
  const env = {
    CACHEROUTE_GRPC_ADDRESS: '0.0.0.0:19002',
    CACHEROUTE_ADMIN_ADDRESS: '0.0.0.0:19003',
    CACHEROUTE_LOG_LEVEL: 'debug',
    CACHEROUTE_STRATEGY: 'power-of-two',
    CACHEROUTE_REPLICA_ID: 'cacheroute-7f9c-abcde',
  };

  it('overrides the five documented fields', () => {
    expect(ENV_OVERRIDES.map((o) => o.env)).to.have.members(Object.keys(env));
    const c = parseConfig({ ...MINIMAL, server: { grpcAddress: '127.0.0.1:1' }, strategy: 'random' }, { env });
    expect(c.server.grpcAddress).to.equal('0.0.0.0:19002');
    expect(c.server.adminAddress).to.equal('0.0.0.0:19003');
    expect(c.telemetry.logLevel).to.equal('debug');
    expect(c.strategy).to.equal('power-of-two');
    expect(c.replication.replicaId).to.equal('cacheroute-7f9c-abcde');
  });

  it('does not modify the input and ignores empty variables', () => {
    const input = { ...MINIMAL, server: { drainTimeoutMs: 5 } };
    const { doc, sources } = applyEnvOverrides(input, { CACHEROUTE_GRPC_ADDRESS: '0.0.0.0:1', CACHEROUTE_STRATEGY: '' });
    expect(input.server).to.deep.equal({ drainTimeoutMs: 5 });
    expect(doc).to.deep.include({ server: { drainTimeoutMs: 5, grpcAddress: '0.0.0.0:1' } });
    expect((doc as Record<string, unknown>)['strategy']).to.equal(undefined);
    expect([...sources]).to.deep.equal([['server.grpcAddress', 'CACHEROUTE_GRPC_ADDRESS']]);
  });

  it('applies no overrides unless an env is passed', () => {
    const c = parseConfig({ ...MINIMAL, strategy: 'random' });
    expect(c.strategy).to.equal('random');
  });

  it('invalid values are reported with the variable name', () => {
    const problems = problemsOf(() => parseConfig(MINIMAL, { env: { CACHEROUTE_STRATEGY: 'fast', CACHEROUTE_GRPC_ADDRESS: 'router:1' } }));
    expect(problems).to.have.length(2);
    expect(problems.find((p) => p.startsWith('strategy:'))).to.match(/\(from CACHEROUTE_STRATEGY\)$/);
    expect(problems.find((p) => p.startsWith('server.grpcAddress:'))).to.match(/\(from CACHEROUTE_GRPC_ADDRESS\)$/);
  });
});
