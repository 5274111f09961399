import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { ActiveHealthChecker, probe } from '../../../src/health/active-health-checker.js';
import type { ActiveResult } from '../../../src/health/engine-health-tracker.js';
import { EngineHealthMonitor } from '../../../src/health/engine-health-monitor.js';
import { DEFAULT_HEALTH_CONFIG } from '../../../src/health/health-config.js';
import type { RouteDecision } from '../../../src/core/types.js';
import { EngineSignalStore } from '../../../src/endpoints/engine-metrics-store.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';
import { testEndpoint } from '../../kit/fake-routing-service.js';

const A = testEndpoint('10.0.0.1:8000', 0);
const B = testEndpoint('10.0.0.2:8000', 1);

function decision(picked = A): RouteDecision {
  return {
    requestId: 'r',
    endpoint: picked,
    fallbacks: [B],
    strategy: 's',
    reason: 'load',
    matchedBlocks: 0,
    totalBlocks: 0,
    candidates: [],
    decisionMicros: 1,
  };
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

describe('health/active-health-checker kept connections (real sockets)', () => {
  /** A health server counting connections; `resetSecond` destroys a connection on its second request. */
  async function healthServer(resetSecond: boolean): Promise<{ server: Server; port: number; connections: () => number }> {
    let connections = 0;
    const server = createServer((req, res) => {
      const socket = req.socket as typeof req.socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      if (resetSecond && socket.served === 2) {
        socket.destroy();
        return;
      }
      res.writeHead(200).end('ok');
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { server, port: (server.address() as AddressInfo).port, connections: () => connections };
  }

  function checker(port: number, results: ActiveResult[]): ActiveHealthChecker {
    return new ActiveHealthChecker(() => [{ endpointId: 'e', url: `http://127.0.0.1:${port}/health` }], {
      intervalMs: 1000,
      timeoutMs: 1000,
      onResult: (_id, result) => results.push(result),
    });
  }

  it('reuses one connection per engine across checks', async () => {
    const h = await healthServer(false);
    const results: ActiveResult[] = [];
    const c = checker(h.port, results);
    try {
      for (let i = 0; i < 5; i++) await c.checkOnce();
      expect(results).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'ok']);
      expect(h.connections()).to.equal(1);
    } finally {
      c.stop();
      await new Promise<void>((r) => h.server.close(() => r()));
    }
  });

  it('leaves out checks the scrape vouched for, but reads /health at least every maxSkips + 1 ticks', async () => {
    let checks = 0;
    const server = createServer((_req, res) => {
      checks++;
      res.writeHead(200).end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    let vouched = true;
    const c = new ActiveHealthChecker(() => [{ endpointId: 'e', url: `http://127.0.0.1:${port}/health` }], {
      intervalMs: 25,
      timeoutMs: 500,
      maxSkips: 2,
      skip: () => vouched,
      onResult: () => undefined,
    });
    try {
      c.start();
      await new Promise((r) => setTimeout(r, 25 * 9 + 10));
      const ticks = checks + c.skippedChecks;
      expect(ticks).to.be.at.least(6);
      expect(c.skippedChecks, 'two of every three ticks skipped').to.be.within(Math.floor((ticks * 2) / 3) - 1, Math.ceil((ticks * 2) / 3));
      vouched = false;
      const before = checks;
      await new Promise((r) => setTimeout(r, 25 * 4));
      expect(checks - before, 'every tick checks when the scrape does not vouch').to.be.at.least(3);
    } finally {
      c.stop();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('vouches from a fresh good scrape only while every active check passed and no scrape failed since', () => {
    const clock = new ManualClock(0);
    const store = new EngineSignalStore(clock);
    const m = new EngineHealthMonitor({ config: DEFAULT_HEALTH_CONFIG, endpoints: () => [A], clock, logger: silentLogger, store });
    const vouches = (): boolean => m.scrapeVouches(A.id);
    expect(vouches(), 'no scrape yet').to.equal(false);
    store.recordSuccess(A.id, { engine: 'vllm', waiting: 0 });
    expect(vouches()).to.equal(true);
    clock.advance(501);
    expect(vouches(), 'the scrape is older than the interval').to.equal(false);
    store.recordSuccess(A.id, { engine: 'vllm', waiting: 0 });
    m.tracker.recordActive(A.id, 'timeout');
    expect(vouches(), 'an active check failed').to.equal(false);
    m.tracker.recordActive(A.id, 'ok');
    expect(vouches()).to.equal(true);
    store.recordError(A.id, 'connect ECONNREFUSED');
    expect(vouches(), 'a scrape failed since').to.equal(false);
  });

  it('retries a check whose kept connection the engine reset on a fresh one, and still reads a stopped engine as refused', async () => {
    const h = await healthServer(true);
    const results: ActiveResult[] = [];
    const c = checker(h.port, results);
    try {
      await c.checkOnce();
      await c.checkOnce(); // the server resets the kept connection: retried, not a failure
      expect(results).to.deep.equal(['ok', 'ok']);
      expect(h.connections()).to.equal(2);
      await c.checkOnce(); // the fresh connection was not kept (connection: close): a new one
      expect(results).to.deep.equal(['ok', 'ok', 'ok']);
      h.server.closeAllConnections();
      await new Promise<void>((r) => h.server.close(() => r()));
      await c.checkOnce();
      expect(results.at(-1)).to.equal('refused');
    } finally {
      c.stop();
    }
  });
});
