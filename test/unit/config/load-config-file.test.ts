import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadConfigFile } from '../../../src/config/load-config-file.js';
import { configFixture, exampleFile, problemsOf } from './config-helpers.js';
import { isRouterError } from '../../../src/core/errors.js';

function expectBadConfig(fn: () => unknown, ...fragments: string[]): void {
  try {
    fn();
    expect.fail('should throw');
  } catch (err) {
    expect(isRouterError(err, 'BAD_CONFIG'), String(err)).to.equal(true);
    for (const f of fragments) expect((err as Error).message).to.include(f);
  }
}

describe('config/load-config-file', () => {
  it('examples/router.yaml parses: four engines, cache-aware', () => {
    const c = loadConfigFile(exampleFile('router.yaml'), {});
    expect(c.endpoints.map((e) => e.address)).to.deep.equal(['127.0.0.1:8001', '127.0.0.1:8002', '127.0.0.1:8003', '127.0.0.1:8004']);
    expect(c.strategy).to.equal('cache-aware');
    expect(c.plugins.find((p) => p.type === 'session-affinity-scorer')?.parameters).to.include({ header: 'x-session-id' });
  });

  it('examples/router-minimal.yaml parses with defaults', () => {
    const c = loadConfigFile(exampleFile('router-minimal.yaml'), {});
    expect(c.endpoints).to.have.length(2);
    expect(c.server.grpcAddress).to.equal('127.0.0.1:9002');
  });

  it('a valid fixture with IPv6, pools and shorthand endpoints', () => {
    const c = loadConfigFile(configFixture('valid-two-pools.yaml'), {});
    expect(c.server.grpcAddress).to.equal('[::]:9102');
    expect(c.endpoints.map((e) => [e.address, e.pool])).to.deep.equal([
      ['[2001:db8::1]:8000', 'gpu-a'],
      ['10.0.0.2:8000', 'gpu-b'],
      ['10.0.0.3:8000', 'default'],
    ]);
    expect(c.endpoints[1]?.metricsUrl).to.equal('http://10.0.0.2:9100/metrics');
    expect(c.strategy).to.equal('bounded-load-hash');
  });

  it('applies environment overrides (process.env by default, explicit env here)', () => {
    const c = loadConfigFile(exampleFile('router-minimal.yaml'), {
      CACHEROUTE_STRATEGY: 'least-request',
      CACHEROUTE_LOG_LEVEL: 'warn',
    });
    expect(c.strategy).to.equal('least-request');
    expect(c.telemetry.logLevel).to.equal('warn');
  });

  it('lists every problem of an invalid file with its path', () => {
    const problems = problemsOf(() => loadConfigFile(configFixture('invalid-many.yaml'), {}));
    const paths = problems.map((p) => p.slice(0, p.indexOf(':')));
    expect(paths).to.have.members([
      'requests.paths[0]',
      'endpoints[0].address',
      'endpoints[2].address',
      'strategy',
      'cacheAware.weights.prefix',
    ]);
  });

  it('names the file in errors', () => {
    expectBadConfig(() => loadConfigFile(configFixture('invalid-many.yaml'), {}), 'invalid-many.yaml');
  });

  it('rejects duplicate YAML keys', () => {
    expectBadConfig(() => loadConfigFile(configFixture('invalid-duplicate-key.yaml'), {}), 'not valid YAML', 'unique');
  });

  it('hints at quoting unquoted IPv6 addresses', () => {
    expectBadConfig(() => loadConfigFile(configFixture('invalid-unquoted-ipv6.yaml'), {}), 'must be quoted');
  });

  it('rejects a document that is not a mapping', () => {
    expectBadConfig(() => loadConfigFile(configFixture('invalid-not-a-mapping.yaml'), {}), 'expected a mapping');
  });

  it('missing files and empty files are BAD_CONFIG', () => {
    expectBadConfig(() => loadConfigFile(configFixture('does-not-exist.yaml'), {}), 'ENOENT');
    const dir = mkdtempSync(join(tmpdir(), 'cacheroute-config-'));
    try {
      const empty = join(dir, 'empty.yaml');
      writeFileSync(empty, '');
      expectBadConfig(() => loadConfigFile(empty, {}), 'empty');
      const aliases = join(dir, 'aliases.yaml');
      const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
      for (let i = 0; i < 8; i++)
        lines.push(
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(', ')}]`,
        );
      writeFileSync(aliases, lines.join('\n'));
      expectBadConfig(() => loadConfigFile(aliases, {}), 'alias');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
