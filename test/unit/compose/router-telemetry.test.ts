import { expect } from 'chai';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { defaultConfig } from '../../../src/config/default-config.js';
import { createScheduler, dataLayerOptions } from '../../../src/compose/create-scheduler.js';
import { DataLayer } from '../../../src/datalayer/data-layer.js';
import { EndpointRegistry } from '../../../src/endpoints/registry.js';
import { AdminServer } from '../../../src/admin/admin-server.js';
import { RouterTelemetry } from '../../../src/compose/router-telemetry.js';
import { instrumentTelemetry } from '../../../src/compose/instrument-app.js';
import type { Tracing } from '../../../src/telemetry/tracing.js';
import { createLogger, silentLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import type { RouteRequest } from '../../../src/core/types.js';
import type { AppParts } from '../../../src/compose/app.js';
import { ATTR } from '../../../src/telemetry/decision-span.js';
import { staticEndpointSpecs } from '../../../src/endpoints/endpoint-config.js';
import { instanceParameters } from '../../../src/plugins/instance-parameters.js';

const TID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SYSTEM = 'You are a meticulous assistant for the ACME-7734 fleet. '.repeat(12);

function req(i: number, prompt: string, extra: Partial<RouteRequest> = {}): RouteRequest {
  return {
    requestId: `r${i}`,
    model: '',
    prefix: prompt,
    promptChars: prompt.length,
    promptTokens: Math.ceil(prompt.length / 4),
    stream: false,
    arrivalMs: i,
    traceparent: `00-${TID}-${(0x1000 + i).toString(16).padStart(16, '0')}-01`,
    ...extra,
  };
}

/** Every telemetry a test built, stopped after it (each runs an event-loop sampler). */
const built: RouterTelemetry[] = [];

function fixture(opts: { tracing?: boolean; recent?: number } = {}) {
  const config = defaultConfig({ strategy: 'cache-aware', telemetry: { recentDecisions: opts.recent ?? 8 } });
  const clock = new ManualClock(1000);
  const scheduler = createScheduler(config, { clock, rng: seededRng(1) });
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracing: Tracing = { enabled: true, tracer: provider.getTracer('t'), forceFlush: async () => {}, shutdown: async () => {} };
  const telemetry = new RouterTelemetry({
    config,
    logger: silentLogger,
    version: 'test',
    ...(opts.tracing ? { tracing } : {}),
    sources: {
      endpoints: () => scheduler.endpoints(),
      onDecision: (l) => scheduler.onDecision(l),
      loadOf: (e) => scheduler.registry.loadOf(e),
    },
  });
  built.push(telemetry);
  return { config, clock, scheduler, telemetry, exporter };
}

async function get(port: number, path: string): Promise<{ status: number; type: string; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

describe('router-telemetry', () => {
  afterEach(() => {
    for (const t of built.splice(0)) t.stop();
  });
  it('turns scheduler decisions into metrics, explain records and spans', async () => {
    const { scheduler, telemetry, exporter } = fixture({ tracing: true });
    const tickets = [0, 1, 2, 3].map((i) => scheduler.route(req(i, SYSTEM + `question ${i}`)));
    tickets[0]!.finish({ status: 200, aborted: false, promptTokens: 180, cachedTokens: 0 });
    tickets[1]!.finish({ status: 200, aborted: false, promptTokens: 180, cachedTokens: 160 });

    const text = await telemetry.metrics.text();
    const decided = [...text.matchAll(/^cacheroute_decisions_total\{[^}]*\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    expect(decided).to.equal(4);
    // Two requests still in flight show up in the gauges read from the registry.
    const inflight = [...text.matchAll(/^cacheroute_endpoint_inflight_requests\{[^}]*\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    expect(inflight).to.equal(2);
    expect(text).to.match(/cacheroute_engine_cached_tokens_total\{endpoint="127\.0\.0\.1:800\d"\} 160/);

    const recent = telemetry.recent.latest(10);
    expect(recent.map((r) => r.requestId)).to.deep.equal(['r3', 'r2', 'r1', 'r0']);
    expect(recent[2]!.outcome).to.deep.include({ status: 200, cachedTokens: 160 });
    expect(recent[0]!.traceId).to.equal(TID);
    // Later requests share the long system prompt: the index predicts a match.
    expect(recent[0]!.matchedBlocks).to.be.greaterThan(0);

    const spans = exporter.getFinishedSpans();
    expect(spans).to.have.length(4);
    expect(spans.every((s) => s.spanContext().traceId === TID)).to.equal(true);
    expect(spans[3]!.attributes[ATTR.strategy]).to.equal('cache-aware');
    expect(JSON.stringify(spans.map((s) => s.attributes))).to.not.include('ACME-7734');
  });

  it('records no spans without tracing', () => {
    const { scheduler, exporter } = fixture({ tracing: false });
    scheduler.route(req(0, SYSTEM));
    expect(exporter.getFinishedSpans()).to.have.length(0);
  });

  it('stops observing after stop()', async () => {
    const { scheduler, telemetry } = fixture();
    scheduler.route(req(0, SYSTEM));
    telemetry.stop();
    telemetry.stop();
    scheduler.route(req(1, SYSTEM));
    expect(telemetry.recent.length).to.equal(1);
  });

  describe('admin routes', () => {
    let admin: AdminServer;
    let port: number;
    let f: ReturnType<typeof fixture>;

    beforeEach(async () => {
      f = fixture({ recent: 3 });
      admin = new AdminServer({ address: '127.0.0.1:0', logger: silentLogger });
      f.telemetry.registerRoutes(admin);
      port = (await admin.start()).port;
    });
    afterEach(async () => {
      await admin.stop();
    });

    it('GET /metrics serves the Prometheus text format', async () => {
      f.scheduler.route(req(0, SYSTEM));
      const r = await get(port, '/metrics');
      expect(r.status).to.equal(200);
      expect(r.type).to.match(/^text\/plain; version=0\.0\.4/);
      expect(r.body).to.match(/^cacheroute_decisions_total\{strategy="cache-aware",endpoint="127\.0\.0\.1:800\d",reason="[a-z-]+"\} 1$/m);
      expect(r.body).to.include('cacheroute_build_info{version="test"} 1');
      expect(r.body).to.match(/^cacheroute_process_cpu_seconds_total \d/m);
      expect(r.body).to.match(/^cacheroute_process_resident_memory_bytes \d/m);
    });

    it('GET /debug/endpoints shows each configured endpoint with its load', async () => {
      f.scheduler.route(req(0, SYSTEM));
      const r = await get(port, '/debug/endpoints');
      expect(r.status).to.equal(200);
      const body = JSON.parse(r.body) as {
        strategy: string;
        endpoints: { id: string; load: { inflightRequests: number; metricsAgeMs: number | null } }[];
      };
      expect(body.strategy).to.equal('cache-aware');
      expect(body.endpoints.map((e) => e.id)).to.deep.equal(['127.0.0.1:8001', '127.0.0.1:8002', '127.0.0.1:8003', '127.0.0.1:8004']);
      expect(body.endpoints.reduce((a, e) => a + e.load.inflightRequests, 0)).to.equal(1);
      expect(body.endpoints[0]!.load.metricsAgeMs).to.equal(null); // never scraped
    });

    it('GET /debug/decisions?n= returns the newest n, capped by the ring', async () => {
      for (let i = 0; i < 5; i++) f.scheduler.route(req(i, SYSTEM + i));
      let body = JSON.parse((await get(port, '/debug/decisions?n=2')).body) as {
        count: number;
        kept: number;
        decisions: { requestId: string; candidates: { endpoint: string }[]; candidateCount: number; endpoint: string }[];
      };
      expect(body.decisions.map((d) => d.requestId)).to.deep.equal(['r4', 'r3']);
      const d0 = body.decisions[0]!;
      expect(d0.candidates.length).to.equal(d0.candidateCount).and.be.greaterThan(0);
      expect(d0.candidates.map((c) => c.endpoint)).to.include(d0.endpoint);
      body = JSON.parse((await get(port, '/debug/decisions?n=100')).body) as typeof body;
      expect(body.kept).to.equal(3);
      expect(body.decisions.map((d) => d.requestId)).to.deep.equal(['r4', 'r3', 'r2']);
      const all = await get(port, '/debug/decisions');
      expect(all.body).to.not.include('ACME-7734');
      expect((await get(port, '/debug/decisions?n=-1')).status).to.equal(400);
      expect((await get(port, '/debug/decisions?n=abc')).status).to.equal(400);
    });
  });

  it('instrumentTelemetry wires a scheduler into an app (routes, edge stats, stop)', async () => {
    const config = defaultConfig();
    const clock = new ManualClock(0);
    const scheduler = createScheduler(config, { clock, rng: seededRng(3) });
    const admin = new AdminServer({ address: '127.0.0.1:0', logger: silentLogger });
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn', write: (l) => void lines.push(l) });
    const parts = { config, scheduler, admin, clock, logger } as unknown as AppParts;
    let seen: RouterTelemetry | undefined;
    const inst = instrumentTelemetry({ onTelemetry: (t) => (seen = t) })(parts);
    const { port } = await admin.start();
    try {
      scheduler.route(req(0, SYSTEM)).finish({ status: 200, aborted: false });
      inst.edgeStats?.streamOpened();
      inst.edgeStats?.streamError('NO_ENDPOINT');
      const m = await get(port, '/metrics');
      expect(m.body).to.match(/cacheroute_requests_completed_total\{endpoint="[^"]+",outcome="success"\} 1/);
      expect(m.body).to.include('cacheroute_extproc_stream_errors_total{kind="no_endpoint"} 1');
      expect(m.body).to.match(/cacheroute_build_info\{version="\d+\.\d+\.\d+"\} 1/);
      const e = JSON.parse((await get(port, '/debug/endpoints')).body) as { endpoints: { prefixIndex?: { capacityBlocks: number } }[] };
      expect(e.endpoints[0]!.prefixIndex?.capacityBlocks).to.equal(
        instanceParameters<{ indexCapacityBlocks: number }>(config, 'prefix-cache').indexCapacityBlocks,
      );
      await inst.stop?.();
      scheduler.route(req(1, SYSTEM));
      expect(seen?.recent.length).to.equal(1);
      expect(lines).to.deep.equal([]);
    } finally {
      await admin.stop();
    }
  });

  it('instrumentTelemetry reads engine scrape stats and fills the staleness metric hook', async () => {
    // A scheduler whose data layer polls engines (the poller itself is never started here).
    const config = defaultConfig({ engineMetrics: { enabled: true } });
    const clock = new ManualClock(5000);
    const scheduler = createScheduler(config, { clock, rng: seededRng(4) });
    // Its own registry: /metrics reads the scheduler's loads, which must not merge (and count) here too.
    const dataLayer = new DataLayer(
      dataLayerOptions(config),
      new EndpointRegistry(staticEndpointSpecs(config.endpoints), clock),
      clock,
      silentLogger,
    );
    const store = dataLayer.store!;
    const staleness = dataLayer.staleness!;
    const withServices = Object.assign(Object.create(scheduler) as typeof scheduler, { dataLayer });
    const admin = new AdminServer({ address: '127.0.0.1:0', logger: silentLogger });
    const parts = { config, scheduler: withServices, admin, clock, logger: silentLogger } as unknown as AppParts;
    const inst = instrumentTelemetry()(parts);
    const { port } = await admin.start();
    try {
      store.recordError('127.0.0.1:8002', 'connect ECONNREFUSED');
      const ep = scheduler.endpoints()[1]!;
      staleness.merge(ep.id, 0); // never scraped: "missing"
      const m = (await get(port, '/metrics')).body;
      expect(m).to.include('cacheroute_engine_scrape_errors_total{endpoint="127.0.0.1:8002"} 1');
      expect(m).to.include('cacheroute_engine_signal_age_seconds{endpoint="127.0.0.1:8002"} +Inf');
      expect(m).to.include('cacheroute_engine_signal_fallbacks_total{endpoint="127.0.0.1:8002",reason="missing"} 1');
      const e = JSON.parse((await get(port, '/debug/endpoints')).body) as { endpoints: { id: string; engineMetrics?: unknown }[] };
      expect(e.endpoints.find((x) => x.id === '127.0.0.1:8002')?.engineMetrics).to.deep.equal({
        scrapes: 1,
        errors: 1,
        ageMs: null,
        lastError: 'connect ECONNREFUSED',
      });
    } finally {
      await inst.stop?.();
      await admin.stop();
    }
  });
});

describe('router-telemetry with the auto profile handler', () => {
  it('shows the chosen profile and the handler time on spans and metrics, and every plugin at /debug/plugins', async () => {
    const config = defaultConfig({ strategy: 'auto' });
    const clock = new ManualClock(1000);
    const scheduler = createScheduler(config, { clock, rng: seededRng(1) });
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracing: Tracing = { enabled: true, tracer: provider.getTracer('t'), forceFlush: async () => {}, shutdown: async () => {} };
    const admin = new AdminServer({ address: '127.0.0.1:0', logger: silentLogger });
    const parts = { config, scheduler, admin, clock, logger: silentLogger } as unknown as AppParts;
    let telemetry: RouterTelemetry | undefined;
    const inst = instrumentTelemetry({ tracing, onTelemetry: (t) => (telemetry = t) })(parts);
    const { port } = await admin.start();
    try {
      scheduler.route(req(1, SYSTEM)).finish({ aborted: false });
      const span = exporter.getFinishedSpans()[0]!;
      expect(span.attributes[ATTR.strategy]).to.equal('auto');
      expect(span.attributes[ATTR.profile]).to.equal('learning');
      expect(span.attributes[`${ATTR.pluginMicrosPrefix}auto`], 'the handler is timed').to.be.a('number');
      expect(span.attributes[`${ATTR.pluginMicrosPrefix}prefix-cache`]).to.be.a('number');
      const m = await telemetry!.metrics.text();
      expect(m).to.include('cacheroute_profile_decisions_total{strategy="auto",profile="learning"} 1');
      const dbg = JSON.parse((await get(port, '/debug/plugins')).body) as {
        plugins: { name: string; type: string; state?: { mode?: string } }[];
        dataLayer: { traffic: { requests: number } };
      };
      expect(dbg.plugins.find((p) => p.type === 'auto-profile-handler')?.state?.mode).to.equal('learning');
      expect(dbg.plugins.map((p) => p.name)).to.include.members(['prefix-cache', 'learning-cold', 'ttft-model', 'ttft']);
      expect(dbg.dataLayer.traffic.requests).to.equal(1);
    } finally {
      await inst.stop?.();
      await admin.stop();
    }
  });
});
