import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { probe } from '../../../src/health/active-health-checker.js';
import { EngineHealthMonitor } from '../../../src/health/engine-health-monitor.js';
import { DEFAULT_HEALTH_CONFIG } from '../../../src/health/health-config.js';
import type { RouteDecision } from '../../../src/core/types.js';
import { EngineSignalStore } from '../../../src/endpoints/engine-metrics-store.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';
import { testEndpoint } from '../../helpers/fake-routing-service.js';

const A = testEndpoint('10.0.0.1:8000', 0);
const B = testEndpoint('10.0.0.2:8000', 1);

function decision(picked = A): RouteDecision {
  return { requestId: 'r', endpoint: picked, fallbacks: [B], strategy: 's', reason: 'load', matchedBlocks: 0, totalBlocks: 0, candidates: [], decisionMicros: 1 };
}

function monitor(store?: EngineSignalStore) {
  const clock = new ManualClock(0);
  const restarts: string[] = [];
  const m = new EngineHealthMonitor({
    config: { ...DEFAULT_HEALTH_CONFIG, active: { ...DEFAULT_HEALTH_CONFIG.active, enabled: false } },
    endpoints: () => [A, B],
    clock,
    logger: silentLogger,
    ...(store !== undefined ? { store } : {}),
    onRestart: (ep, reason) => restarts.push(`${ep.id} ${reason}`),
  });
  return { m, clock, restarts };
}

describe('health/engine-health-monitor', () => {
  it('reads passive evidence from outcomes: a retried pick fails, 5xx fails the server, the rest succeeds', () => {
    const { m } = monitor();
    const healthy = (id: string) => m.tracker.isRoutable(id);
    // Envoy retried A's requests on B three times: A is ejected, B is fine.
    for (let i = 0; i < 3; i++) m.onCompleted(undefined, decision(A), { aborted: false, status: 200, servedBy: B.id });
    expect(healthy(A.id)).to.equal(false);
    expect(healthy(B.id)).to.equal(true);
    // B answers 5xx three times: ejected too.
    for (let i = 0; i < 3; i++) m.onCompleted(undefined, decision(B), { aborted: false, status: 503 });
    expect(healthy(B.id)).to.equal(false);
    // Aborted without status says nothing.
    const { m: m2 } = monitor();
    for (let i = 0; i < 10; i++) m2.onCompleted(undefined, decision(A), { aborted: true });
    expect(m2.tracker.isRoutable(A.id)).to.equal(true);
    // The load source publishes the verdict.
    const snap = { inflightRequests: 0, inflightPromptTokens: 0, pendingTokens: 0, metricsAgeMs: 0, healthy: true };
    expect(m.enrich(A, snap, 0).healthy).to.equal(false);
    expect(m2.enrich(A, snap, 0)).to.equal(snap);
  });

  it('turns connect failures of scrapes into ejections, ignores http errors, and reports counter resets as restarts', () => {
    const clock = new ManualClock(0);
    const store = new EngineSignalStore(clock);
    const { m, restarts } = monitor(store);
    m.start();
    try {
      for (let i = 0; i < 3; i++) store.recordError(B.id, 'http 404');
      m.tick();
      expect(m.tracker.isRoutable(B.id), 'http 404: alive').to.equal(true);
      for (let i = 0; i < 3; i++) store.recordError(A.id, 'connect ECONNREFUSED 10.0.0.1:8000');
      m.tick();
      expect(m.tracker.isRoutable(A.id)).to.equal(false);
      store.recordSuccess(B.id, { engine: 'vllm', prefixCacheQueries: 500 });
      store.recordSuccess(B.id, { engine: 'vllm', prefixCacheQueries: 20 });
      expect(restarts).to.deep.equal([`${B.id} counters went backwards`]);
      expect(m.stats().restarts).to.equal(1);
    } finally {
      m.stop();
    }
  });
});

describe('health/active-health-checker probe (real sockets)', () => {
  let server: Server;
  let port = 0;
  let status = 200;
  before(async () => {
    server = createServer((_req, res) => res.writeHead(status).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('tells ok, bad status and refused apart', async () => {
    const signal = new AbortController().signal;
    status = 200;
    expect((await probe(`http://127.0.0.1:${port}/health`, 1000, signal)).result).to.equal('ok');
    status = 503;
    expect(await probe(`http://127.0.0.1:${port}/health`, 1000, signal)).to.deep.equal({ result: 'bad-status', detail: 'http 503' });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect((await probe(`http://127.0.0.1:${deadPort}/health`, 1000, signal)).result).to.equal('refused');
  });
});
