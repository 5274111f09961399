import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock, systemClock } from '../../../src/util/clock.js';
import { EngineSignalStore } from '../../../src/endpoints/engine-metrics-store.js';
import { EngineMetricsPoller } from '../../../src/endpoints/engine-metrics-poller.js';
import type { ScrapeTarget } from '../../../src/endpoints/engine-metrics-poller.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

async function serve(handler: Handler): Promise<{ server: http.Server; base: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}` };
}

async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const timers = (): number => process.getActiveResourcesInfo().filter((x) => x === 'Timeout').length;

describe('load/engine-metrics-poller', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map(close));
  });

  async function good(waiting: number): Promise<string> {
    let n = 0;
    const { server, base } = await serve((_req, res) => {
      n++;
      res.end(`vllm:num_requests_waiting ${waiting}\nvllm:prefix_cache_queries_total ${n}\n`);
    });
    servers.push(server);
    return base;
  }

  it('keeps scraping healthy engines on schedule while one engine hangs, and times the hang out', async () => {
    const a = await good(3);
    const b = await good(4);
    const hang = await serve(() => {
      /* never answers */
    });
    servers.push(hang.server);
    const store = new EngineSignalStore(systemClock);
    const targets: ScrapeTarget[] = [
      { endpointId: 'a', url: `${a}/metrics` },
      { endpointId: 'h', url: `${hang.base}/metrics` },
      { endpointId: 'b', url: `${b}/metrics` },
    ];
    const poller = new EngineMetricsPoller(store, () => targets, {
      intervalMs: 20,
      timeoutMs: 150,
      maxConcurrency: 2,
      clock: systemClock,
    });
    const before = timers();
    poller.start();
    await sleep(420);
    await poller.stop();
    const byId = new Map(store.stats().map((s) => [s.endpointId, s]));
    expect(byId.get('a')!.scrapes).to.be.greaterThan(3);
    expect(byId.get('b')!.scrapes).to.be.greaterThan(3);
    expect(byId.get('a')!.errors).to.equal(0);
    expect(store.get('b')?.signals.waiting).to.equal(4);
    expect(byId.get('h')!.errors).to.be.greaterThanOrEqual(1);
    expect(byId.get('h')!.lastError).to.equal('timeout');
    expect(poller.stats().timeouts).to.be.greaterThanOrEqual(1);
    expect(poller.stats().skippedPending).to.be.greaterThan(0);
    expect(poller.isRunning).to.equal(false);
    expect(timers()).to.equal(before, 'no timers left after stop');
  });

  it("spaces an endpoint's scrapes by its scrape duration ÷ maxScrapeShare, and leaves cheap endpoints on the interval", async () => {
    const clock = new ManualClock(1000);
    // The slow page "takes" 10 ms of the manual clock; the cheap one none.
    const slow = await serve((_req, res) => {
      clock.advance(10);
      res.end('vllm:num_requests_waiting 1\n');
    });
    const cheap = await serve((_req, res) => res.end('vllm:num_requests_waiting 2\n'));
    servers.push(slow.server, cheap.server);
    const store = new EngineSignalStore(clock);
    const targets: ScrapeTarget[] = [
      { endpointId: 'slow', url: `${slow.base}/metrics` },
      { endpointId: 'cheap', url: `${cheap.base}/metrics` },
    ];
    // One scrape at a time, so the slow page's clock advance falls inside its own scrape only.
    const poller = new EngineMetricsPoller(store, () => targets, {
      intervalMs: 100,
      timeoutMs: 500,
      maxConcurrency: 1,
      maxScrapeShare: 0.01,
      clock,
    });
    const scrapes = (id: string): number => store.stats().find((x) => x.endpointId === id)?.scrapes ?? 0;
    await poller.pollOnce(); // slow: started at 1000, took 10 ms → next no sooner than 2000
    clock.set(1900);
    await poller.pollOnce();
    expect(scrapes('slow')).to.equal(1);
    expect(scrapes('cheap')).to.equal(2);
    expect(poller.stats().skippedBudget).to.equal(1);
    clock.set(2000);
    await poller.pollOnce();
    expect(scrapes('slow')).to.equal(2);
    // Without a budget every poll scrapes.
    const unlimited = new EngineMetricsPoller(new EngineSignalStore(clock), () => targets, { intervalMs: 100, timeoutMs: 500, clock });
    await unlimited.pollOnce();
    await unlimited.pollOnce();
    expect(unlimited.stats().skippedBudget).to.equal(0);
    expect(() => new EngineMetricsPoller(store, () => targets, { intervalMs: 100, timeoutMs: 500, maxScrapeShare: 0, clock })).to.throw(
      RangeError,
    );
  });

  it('backs an idle endpoint off to idleIntervalMs, and a change or a touch puts it back on the interval', async () => {
    const clock = new ManualClock(1000);
    let page = 'vllm:num_requests_waiting 0\n';
    const { server, base } = await serve((_req, res) => res.end(page));
    servers.push(server);
    const store = new EngineSignalStore(clock);
    const poller = new EngineMetricsPoller(store, () => [{ endpointId: 'a', url: `${base}/metrics` }], {
      intervalMs: 100,
      idleIntervalMs: 400,
      timeoutMs: 500,
      clock,
    });
    const scrapes = (): number => store.stats()[0]?.scrapes ?? 0;
    const at = async (ms: number): Promise<void> => {
      clock.set(ms);
      await poller.pollOnce();
    };
    await at(1000); // first reading
    await at(1100); // unchanged → next no sooner than 1100 + 200
    await at(1200);
    expect(scrapes()).to.equal(2);
    expect(poller.stats().skippedIdle).to.equal(1);
    await at(1300); // unchanged again → spacing 400 (the cap)
    await at(1500);
    expect(scrapes()).to.equal(3);
    poller.touch('a'); // the router just sent it a request
    await at(1500);
    expect(scrapes()).to.equal(4);
    await at(1600); // nothing since the touch: backs off again
    await at(1700);
    expect(scrapes()).to.equal(5);
    page = 'vllm:num_requests_waiting 3\n';
    await at(1800);
    expect(store.get('a')?.signals.waiting, 'a changed page is read at the next due scrape').to.equal(3);
    await at(1900); // the change keeps it on the interval
    expect(scrapes()).to.equal(7);
    expect(store.get('a')?.signals.waiting).to.equal(3);
    expect(store.get('a')?.changedAtMs).to.equal(1800);
    expect(poller.stats().unchangedPages, 'identical pages are not parsed again').to.equal(5);
    // Without idleIntervalMs every poll scrapes.
    const plain = new EngineMetricsPoller(new EngineSignalStore(clock), () => [{ endpointId: 'a', url: `${base}/metrics` }], {
      intervalMs: 100,
      timeoutMs: 500,
      clock,
    });
    for (let i = 0; i < 3; i++) await plain.pollOnce();
    expect(plain.stats().skippedIdle).to.equal(0);
  });

  it('never runs more than maxConcurrency scrapes at once and scrapes every target in pollOnce', async () => {
    let active = 0;
    let peak = 0;
    const { server, base } = await serve((_req, res) => {
      active++;
      peak = Math.max(peak, active);
      setTimeout(() => {
        active--;
        res.end('vllm:num_requests_running 1\n');
      }, 25);
    });
    servers.push(server);
    const store = new EngineSignalStore(systemClock);
    const targets = Array.from({ length: 6 }, (_, i) => ({ endpointId: `e${i}`, url: `${base}/m${i}` }));
    const poller = new EngineMetricsPoller(store, () => targets, {
      intervalMs: 1000,
      timeoutMs: 1000,
      maxConcurrency: 2,
      clock: systemClock,
    });
    await poller.pollOnce();
    expect(peak).to.equal(2);
    expect(store.stats().filter((s) => s.scrapes === 1 && s.errors === 0)).to.have.length(6);
  });

  it('records HTTP errors and connection failures as scrape errors', async () => {
    const { server, base } = await serve((_req, res) => {
      res.statusCode = 503;
      res.end('no');
    });
    servers.push(server);
    const dead = await serve(() => {});
    const deadBase = dead.base;
    await close(dead.server);
    const store = new EngineSignalStore(systemClock);
    const poller = new EngineMetricsPoller(
      store,
      () => [
        { endpointId: 's', url: `${base}/metrics` },
        { endpointId: 'd', url: `${deadBase}/metrics` },
      ],
      { intervalMs: 1000, timeoutMs: 500, clock: systemClock },
    );
    await poller.pollOnce();
    const byId = new Map(store.stats().map((s) => [s.endpointId, s]));
    expect(byId.get('s')!.lastError).to.equal('http 503');
    expect(byId.get('d')!.errors).to.equal(1);
    expect(byId.get('d')!.lastError).to.match(/ECONNREFUSED|connect/);
  });

  it('caps the body and drops the cut line instead of reading a truncated number', async () => {
    const filler = `# ${'x'.repeat(3000)}\n`;
    const { server, base } = await serve((_req, res) => {
      res.end(`vllm:num_requests_running 5\n${filler}vllm:num_requests_waiting 12345\n`);
    });
    servers.push(server);
    const store = new EngineSignalStore(systemClock);
    const poller = new EngineMetricsPoller(store, () => [{ endpointId: 'a', url: `${base}/metrics` }], {
      intervalMs: 1000,
      timeoutMs: 500,
      maxBodyBytes: 1024,
      clock: systemClock,
    });
    await poller.pollOnce();
    expect(store.get('a')?.signals.running).to.equal(5);
    expect(store.get('a')?.signals.waiting).to.equal(undefined);
    expect(poller.stats().truncatedBodies).to.equal(1);
  });

  it('stops when its AbortSignal is aborted, aborting a pending scrape without recording an error', async () => {
    const hang = await serve(() => {});
    servers.push(hang.server);
    const store = new EngineSignalStore(systemClock);
    const poller = new EngineMetricsPoller(store, () => [{ endpointId: 'h', url: `${hang.base}/metrics` }], {
      intervalMs: 10,
      timeoutMs: 10_000,
      clock: systemClock,
    });
    const before = timers();
    const ac = new AbortController();
    poller.start(ac.signal);
    await sleep(40);
    expect(poller.stats().inFlight).to.equal(1);
    ac.abort();
    await poller.stop(); // idempotent; waits for the aborted scrape to settle
    expect(poller.isRunning).to.equal(false);
    expect(poller.stats().inFlight).to.equal(0);
    expect(store.stats().find((s) => s.endpointId === 'h')?.errors ?? 0).to.equal(0);
    expect(timers()).to.equal(before);
  });
});
