import { expect } from 'chai';
import { DEFAULT_ADMISSION_CONFIG } from '../../../src/admission/admission-config.js';
import { endpointSaturated, FleetSaturation } from '../../../src/admission/saturation.js';
import { parseConfig } from '../../../src/config/parse-config.js';
import { DEFAULT_HEALTH_CONFIG } from '../../../src/health/health-config.js';
import { EndpointRegistry } from '../../../src/endpoints/registry.js';
import { ManualClock } from '../../../src/util/clock.js';
import { load, request } from '../builders.js';
import { MINIMAL, problemsOf } from '../config/config-helpers.js';

const S = { maxQueuedPerEndpoint: 4, maxKvUsage: 0.9, maxInflightPerEndpoint: 0 };

describe('admission/saturation', () => {
  it('saturates an engine on its prefill queue (router or fresh engine numbers), KV usage or in-flight cap', () => {
    expect(endpointSaturated(load({ inflightRequests: 9, prefillingRequests: 3 }), S, 1000)).to.equal(false);
    expect(endpointSaturated(load({ prefillingRequests: 4 }), S, 1000)).to.equal(true);
    expect(endpointSaturated(load({ waiting: 5, metricsAgeMs: 100 }), S, 1000)).to.equal(true);
    expect(endpointSaturated(load({ waiting: 5, metricsAgeMs: 5000 }), S, 1000), 'stale engine numbers do not count').to.equal(false);
    expect(endpointSaturated(load({ kvUsage: 0.95, metricsAgeMs: 10 }), S, 1000)).to.equal(true);
    expect(endpointSaturated(load({ inflightRequests: 7 }), { ...S, maxInflightPerEndpoint: 7 }, 1000)).to.equal(true);
  });

  it('calls the fleet saturated only when every healthy eligible engine is', () => {
    const clock = new ManualClock(0);
    const reg = new EndpointRegistry(
      [
        { id: '10.0.0.1:8000', address: '10.0.0.1', port: 8000, pool: 'p', models: ['m'] },
        { id: '10.0.0.2:8000', address: '10.0.0.2', port: 8000, pool: 'p', models: ['m'] },
        { id: '10.0.0.3:8000', address: '10.0.0.3', port: 8000, pool: 'p', models: ['other'] },
      ],
      clock,
    );
    const sat = new FleetSaturation(reg, { ...S, maxQueuedPerEndpoint: 1 }, 1000);
    const r = request({ model: 'm' });
    expect(sat.saturated(r, 0)).to.equal(false);
    reg.inflight.acquire(0, 10);
    expect(sat.saturated(r, 0)).to.equal(false);
    reg.inflight.acquire(1, 10);
    expect(sat.saturated(r, 0), 'both m engines busy; the idle one serves another model').to.equal(true);
    // An unhealthy engine does not count either way; none healthy is not saturation.
    let down = new Set<string>(['10.0.0.2:8000']);
    reg.addLoadSource({ name: 'h', enrich: (e, b) => (down.has(e.id) ? { ...b, healthy: false } : b) });
    expect(sat.saturated(r, 0)).to.equal(true);
    down = new Set(['10.0.0.1:8000', '10.0.0.2:8000']);
    expect(sat.saturated(r, 0)).to.equal(false);
    expect(sat.saturated(request({ model: 'nobody' }), 0)).to.equal(false);
  });
});

describe('config: health, admission and stream idle sections', () => {
  it('defaults: health on, admission off, idle timeouts 30 s / 600 s', () => {
    const c = parseConfig(MINIMAL);
    expect(c.health).to.deep.equal(DEFAULT_HEALTH_CONFIG);
    expect(c.admission).to.deep.equal(DEFAULT_ADMISSION_CONFIG);
    expect(c.server.requestIdleTimeoutMs).to.equal(30_000);
    expect(c.server.responseIdleTimeoutMs).to.equal(600_000);
    const a = parseConfig({ ...MINIMAL, admission: { mode: 'queue', tenantHeader: 'X-Tenant', queue: { maxWaitMs: 2000 } } }).admission;
    expect(a).to.include({ mode: 'queue', tenantHeader: 'x-tenant' });
  });

  it('reports bad values with their field paths', () => {
    expect(problemsOf(() => parseConfig({ ...MINIMAL, health: { active: { intervalMs: 100, timeoutMs: 200 } } })).join('\n')).to.contain(
      'health.active.timeoutMs',
    );
    expect(problemsOf(() => parseConfig({ ...MINIMAL, health: { ejection: { baseMs: 5000, maxMs: 10 } } })).join('\n')).to.contain(
      'health.ejection.maxMs',
    );
    expect(problemsOf(() => parseConfig({ ...MINIMAL, admission: { mode: 'shed' } })).join('\n')).to.contain('admission.mode');
    expect(problemsOf(() => parseConfig({ ...MINIMAL, admission: { tenantHeader: 'bad header' } })).join('\n')).to.contain(
      'admission.tenantHeader',
    );
    expect(problemsOf(() => parseConfig({ ...MINIMAL, admission: { mode: 'queue', queue: { maxWaitMs: 40_000 } } })).join('\n')).to.contain(
      'admission.queue.maxWaitMs',
    );
    expect(parseConfig({ ...MINIMAL, admission: { mode: 'off', queue: { maxWaitMs: 40_000 } } }).admission.mode).to.equal('off');
  });
});
