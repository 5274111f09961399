import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import type { Endpoint } from '../../../src/core/types.js';
import type { LoadSnapshot } from '../../../src/endpoints/load.js';
import { EndpointRegistry, parseEndpointAddress, type LoadSource } from '../../../src/endpoints/registry.js';
import { ManualClock } from '../../../src/util/clock.js';
import { staticEndpointSpecs } from '../../../src/endpoints/endpoint-config.js';

function code(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return isRouterError(e) ? e.code : 'OTHER';
  }
  return undefined;
}

describe('parseEndpointAddress', () => {
  it('parses IPv4 and bracketed IPv6 into Envoy-style ids', () => {
    expect(parseEndpointAddress('10.1.2.3:8000')).to.deep.equal({ id: '10.1.2.3:8000', address: '10.1.2.3', port: 8000 });
    expect(parseEndpointAddress('[::1]:9000')).to.deep.equal({ id: '[::1]:9000', address: '::1', port: 9000 });
  });

  it('rejects malformed addresses with BAD_CONFIG', () => {
    for (const bad of [
      '10.1.2.3',
      'host:80',
      '::1:80',
      '[::1]80',
      '[10.0.0.1]:80',
      '10.0.0.1:0',
      '10.0.0.1:65536',
      '10.0.0.1:8a',
      '10.0.0.256:80',
    ]) {
      expect(
        code(() => parseEndpointAddress(bad)),
        bad,
      ).to.equal('BAD_CONFIG');
    }
  });
});

describe('EndpointRegistry', () => {
  const clock = new ManualClock(1000);
  const reg = new EndpointRegistry(
    staticEndpointSpecs([
      { address: '10.0.0.1:8000', pool: 'p', models: ['llama'] },
      { address: '10.0.0.2:8000', pool: 'p', models: ['qwen'] },
      { address: '10.0.0.3:8000', pool: 'p', models: [], metricsUrl: 'http://10.0.0.3:8000/metrics' },
    ]),
    clock,
  );

  it('assigns dense indexes in config order and looks up by id and index', () => {
    expect(reg.size).to.equal(3);
    expect(reg.all().map((e) => e.index)).to.deep.equal([0, 1, 2]);
    expect(reg.byId('10.0.0.2:8000')?.index).to.equal(1);
    expect(reg.byIndex(2)?.metricsUrl).to.equal('http://10.0.0.3:8000/metrics');
    expect(reg.byId('10.0.0.9:8000')).to.equal(undefined);
    expect(Object.isFrozen(reg.all()[0])).to.equal(true);
  });

  it('rejects duplicate endpoints', () => {
    expect(
      code(
        () =>
          new EndpointRegistry(
            staticEndpointSpecs([
              { address: '10.0.0.1:8000', pool: 'p', models: [] },
              { address: '10.0.0.1:8000', pool: 'q', models: [] },
            ]),
            clock,
          ),
      ),
    ).to.equal('BAD_CONFIG');
  });

  const cases: Array<{ name: string; model: string; subset?: string[]; want: number[] }> = [
    { name: 'model match plus any-model endpoint', model: 'llama', want: [0, 2] },
    { name: 'unknown model only fits any-model endpoints', model: 'mistral', want: [2] },
    { name: 'no model fits everyone', model: '', want: [0, 1, 2] },
    { name: 'subset narrows', model: '', subset: ['10.0.0.3:8000', '10.0.0.1:8000'], want: [0, 2] },
    { name: 'subset and model combine', model: 'qwen', subset: ['10.0.0.1:8000', '10.0.0.2:8000'], want: [1] },
    { name: 'empty subset means nothing', model: '', subset: [], want: [] },
    { name: 'unknown subset ids are ignored', model: '', subset: ['10.9.9.9:1', '10.0.0.2:8000', '10.0.0.2:8000'], want: [1] },
  ];
  for (const c of cases) {
    it(`eligible: ${c.name}`, () => {
      expect(reg.eligible(c.model, c.subset).map((e) => e.index)).to.deep.equal(c.want);
    });
  }

  it('reports model restrictions', () => {
    expect(reg.hasModelRestrictions).to.equal(true);
    const any = new EndpointRegistry(staticEndpointSpecs([{ address: '10.0.0.1:1', pool: 'p', models: [] }]), clock);
    expect(any.hasModelRestrictions).to.equal(false);
  });

  it('loadOf starts from router accounting and applies load sources in order', () => {
    const r = new EndpointRegistry(
      staticEndpointSpecs([
        { address: '10.0.0.1:1', pool: 'p', models: [] },
        { address: '10.0.0.2:1', pool: 'p', models: [] },
      ]),
      clock,
    );
    const ep = r.byIndex(0)!;
    const lease = r.inflight.acquire(0, 120);
    expect(r.loadOf(ep)).to.deep.equal({
      inflightRequests: 1,
      inflightPromptTokens: 120,
      prefillingRequests: 1,
      pendingTokens: 120,
      metricsAgeMs: Infinity,
      healthy: true,
    });
    lease.firstByte();
    expect(r.loadOf(ep)).to.include({ inflightRequests: 1, prefillingRequests: 0 });
    const seen: number[] = [];
    const metrics: LoadSource = {
      name: 'metrics',
      enrich: (e: Endpoint, base: LoadSnapshot, now: number) => {
        seen.push(now);
        return e.index === 0 ? { ...base, waiting: 3, running: 2, kvUsage: 0.5, metricsAgeMs: 40 } : base;
      },
    };
    const health: LoadSource = { name: 'health', enrich: (_e, base) => ({ ...base, healthy: base.kvUsage === undefined }) };
    r.addLoadSource(metrics);
    const remove = r.addLoadSource(health);
    expect(r.loadSources()).to.deep.equal(['metrics', 'health']);
    expect(r.loadOf(ep)).to.include({ waiting: 3, kvUsage: 0.5, healthy: false, inflightRequests: 1 });
    expect(r.loadOf(r.byIndex(1)!).healthy).to.equal(true);
    expect(seen).to.deep.equal([1000, 1000]);
    remove();
    expect(r.loadOf(ep).healthy).to.equal(true);
    lease.release();
    expect(r.loadOf(ep).inflightRequests).to.equal(0);
  });
});
