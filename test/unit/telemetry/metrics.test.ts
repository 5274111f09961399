import { expect } from 'chai';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RouterMetrics } from '../../../src/telemetry/metrics.js';
import type { ScrapeStatsLike } from '../../../src/telemetry/metrics.js';
import { IDLE_LOAD } from '../../../src/endpoints/load.js';
import type { LoadSnapshot } from '../../../src/endpoints/load.js';
import type { Endpoint } from '../../../src/core/types.js';
import { REPO_ROOT } from '../../kit/repo-paths.js';
import { sampleDecision as decision, loopbackEndpoint as endpoint, secretRequest as request } from '../builders.js';

const GOLDEN = join(REPO_ROOT, 'test', 'fixtures', 'metrics', 'router-metrics.prom');

/** Value of one series in exposition text, or undefined. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1).replace('+Inf', 'Infinity'));
  }
  return undefined;
}

function build() {
  const [e0, e1, e2] = [endpoint(0), endpoint(1), endpoint(2)] as [Endpoint, Endpoint, Endpoint];
  const stranger = { ...endpoint(9, 9999), id: '10.0.0.9:9999' };
  const loads = new Map<string, LoadSnapshot>([
    [e0.id, { ...IDLE_LOAD, inflightRequests: 2, inflightPromptTokens: 900, metricsAgeMs: 150 }],
    [e1.id, { ...IDLE_LOAD, inflightRequests: 1, inflightPromptTokens: 300, metricsAgeMs: 2500, healthy: false }],
    [e2.id, { ...IDLE_LOAD }],
  ]);
  let scrapeStats: ScrapeStatsLike[] = [
    { endpointId: e0.id, scrapes: 10, errors: 0, ageMs: 150 },
    { endpointId: e1.id, scrapes: 10, errors: 3, ageMs: 2500 },
    { endpointId: e2.id, scrapes: 4, errors: 4, ageMs: Number.POSITIVE_INFINITY },
    { endpointId: stranger.id, scrapes: 1, errors: 1, ageMs: 1 },
  ];
  const m = new RouterMetrics({
    endpointIds: [e0.id, e1.id, e2.id],
    blockChars: 64,
    charsPerToken: 4, // 16 tokens per block
    version: 'test',
    loads: { list: () => [e0, e1, e2, stranger].map((endpoint) => ({ endpoint, load: loads.get(endpoint.id) ?? IDLE_LOAD })) },
    scrapes: { stats: () => scrapeStats },
  });
  // A known sequence: 3 affinity decisions to e0, 1 cold to e1, 1 decision to an
  // unconfigured endpoint (must be labelled "other"), with fixed decision times.
  const d1 = decision({ requestId: 'a', decisionMicros: 8 });
  const d2 = decision({ requestId: 'b', decisionMicros: 40 });
  const d3 = decision({ requestId: 'c', decisionMicros: 1500, matchedBlocks: 30, totalBlocks: 30 });
  const d4 = decision({ requestId: 'd', endpoint: e1, reason: 'cold', matchedBlocks: 0, totalBlocks: 5, decisionMicros: 20 });
  const d5 = decision({ requestId: 'e', endpoint: stranger, strategy: 'round-robin', reason: 'round-robin', decisionMicros: 5 });
  const r = request({ promptTokens: 400 });
  for (const d of [d1, d2, d3, d4, d5]) m.recordDecision(r, d);
  // Outcomes: a = engine confirms 176 of 192 predicted tokens; b = no usage reported;
  // c = prediction capped by prompt estimate (30 blocks*16=480 > 400); d = served by a
  // fallback after a retry (prediction counts 0); e = aborted.
  m.recordOutcome(r, d1, { status: 200, aborted: false, promptTokens: 410, cachedTokens: 176, servedBy: e0.id });
  m.recordOutcome(r, d2, { status: 200, aborted: false });
  m.recordOutcome(r, d3, { status: 200, aborted: false, promptTokens: 400, cachedTokens: 384 });
  m.recordOutcome(r, d4, { status: 200, aborted: false, promptTokens: 100, cachedTokens: 0, servedBy: e2.id });
  m.recordOutcome(r, d5, { aborted: true });
  m.recordOutcome(r, d2, { status: 503, aborted: false });
  // Edge (kinds as src/extproc/edge-stats.ts reports them): 3 streams, one still open.
  m.streamOpened();
  m.streamOpened();
  m.streamOpened();
  m.streamClosed();
  m.streamClosed();
  m.streamError('PROTOCOL');
  m.streamError('TRANSPORT');
  m.streamError('NO_ENDPOINT');
  m.streamError('ABORTED');
  m.streamError('something-new');
  m.connectionRetired();
  m.connectionRetired();
  // Staleness fallbacks (src/endpoints/staleness.ts reasons).
  m.recordSignalFallback(e1.id, 'age');
  m.recordSignalFallback(e1.id, 'age');
  m.recordSignalFallback(e2.id, 'missing');
  m.recordSignalFallback(stranger.id, 'frozen');
  return { m, setScrapes: (s: ScrapeStatsLike[]) => (scrapeStats = s), e0, e1, e2 };
}

/** Exposition text with the histogram's float sums rounded (platform-independent). */
function normalise(text: string): string {
  return text.replace(
    /^(cacheroute_decision_duration_seconds_sum\{[^}]*\}) (\S+)$/gm,
    (_, k: string, v: string) => `${k} ${Number(v).toFixed(9)}`,
  );
}

describe('metrics', () => {
  it('matches the golden exposition after a known sequence of decisions', async () => {
    const { m } = build();
    const text = normalise(await m.text());
    if (process.env['UPDATE_GOLDEN'] === '1' || !existsSync(GOLDEN)) writeFileSync(GOLDEN, text);
    expect(text).to.equal(readFileSync(GOLDEN, 'utf8'));
  });

  it('counts retired ext_proc connections once per retirement, across scrapes', async () => {
    const { m } = build();
    expect(sample(await m.text(), 'cacheroute_extproc_connections_retired_total')).to.equal(2);
    m.connectionRetired();
    expect(sample(await m.text(), 'cacheroute_extproc_connections_retired_total')).to.equal(3);
    expect(sample(await m.text(), 'cacheroute_extproc_connections_retired_total')).to.equal(3);
  });

  it('counts decisions by strategy, endpoint and reason with bounded endpoint labels', async () => {
    const { m } = build();
    const t = await m.text();
    expect(sample(t, 'cacheroute_decisions_total{strategy="cache-aware",endpoint="127.0.0.1:8001",reason="affinity"}')).to.equal(3);
    expect(sample(t, 'cacheroute_decisions_total{strategy="cache-aware",endpoint="127.0.0.1:8002",reason="cold"}')).to.equal(1);
    expect(sample(t, 'cacheroute_decisions_total{strategy="round-robin",endpoint="other",reason="round-robin"}')).to.equal(1);
    expect(t).to.not.include('10.0.0.9');
  });

  it('buckets decision latency from 10 µs', async () => {
    const { m } = build();
    const t = await m.text();
    const b = (le: string) => sample(t, `cacheroute_decision_duration_seconds_bucket{le="${le}",strategy="cache-aware"}`);
    expect(b('0.00001')).to.equal(1); // 8 µs
    expect(b('0.000025')).to.equal(2); // + 20 µs
    expect(b('0.00005')).to.equal(3); // + 40 µs
    expect(b('0.001')).to.equal(3);
    expect(b('0.0025')).to.equal(4); // + 1.5 ms
    expect(sample(t, 'cacheroute_decision_duration_seconds_count{strategy="cache-aware"}')).to.equal(4);
  });

  it("predicts hit tokens from the deciding plugin's matched chars, not the configured block size", async () => {
    // An explicit graph whose prefix plugin cuts 256-char blocks while the shorthand says 64.
    const m = new RouterMetrics({ endpointIds: ['127.0.0.1:8001'], blockChars: 64, charsPerToken: 4 });
    const r = request({ promptTokens: 1000 });
    const d = decision({ requestId: 'x', matchedBlocks: 2, totalBlocks: 4, matchedChars: 512 });
    expect(m.predictedHitTokens(r, d)).to.equal(128); // 512 chars / 4, not 2 × 64 / 4 = 32
    expect(m.predictedHitTokens(r, decision({ requestId: 'y', matchedBlocks: 2, totalBlocks: 4 }))).to.equal(32);
    expect(m.predictedHitTokens(request({ promptTokens: 100 }), d)).to.equal(100);
  });

  it('compares predicted prefix hits with engine-reported cached tokens', async () => {
    const { m } = build();
    const t = await m.text();
    const ep0 = '{endpoint="127.0.0.1:8001"}';
    // a: 12 blocks * 16 = 192 tokens; c: 30 blocks capped at 400 tokens.
    expect(sample(t, `cacheroute_prefix_predicted_hit_tokens_total${ep0}`)).to.equal(192 + 400);
    expect(sample(t, `cacheroute_prefix_predicted_hit_blocks_total${ep0}`)).to.equal(12 + 30);
    expect(sample(t, `cacheroute_prefix_blocks_total${ep0}`)).to.equal(14 + 30);
    expect(sample(t, `cacheroute_engine_cached_tokens_total${ep0}`)).to.equal(176 + 384);
    expect(sample(t, `cacheroute_engine_prompt_tokens_total${ep0}`)).to.equal(410 + 400);
    // d was served by a fallback: the prediction for that engine was 0.
    expect(sample(t, 'cacheroute_prefix_predicted_hit_tokens_total{endpoint="127.0.0.1:8003"}')).to.equal(0);
    expect(sample(t, 'cacheroute_requests_completed_total{endpoint="127.0.0.1:8001",outcome="success"}')).to.equal(3);
    expect(sample(t, 'cacheroute_requests_completed_total{endpoint="127.0.0.1:8001",outcome="error"}')).to.equal(1);
    expect(sample(t, 'cacheroute_requests_completed_total{endpoint="other",outcome="aborted"}')).to.equal(1);
  });

  it('reads in-flight gauges and signal ages at scrape time', async () => {
    const { m, e0, e1, e2 } = build();
    const t = await m.text();
    expect(sample(t, `cacheroute_endpoint_inflight_requests{endpoint="${e0.id}"}`)).to.equal(2);
    expect(sample(t, `cacheroute_endpoint_inflight_prompt_tokens{endpoint="${e0.id}"}`)).to.equal(900);
    expect(sample(t, `cacheroute_endpoint_healthy{endpoint="${e1.id}"}`)).to.equal(0);
    expect(sample(t, `cacheroute_engine_signal_age_seconds{endpoint="${e1.id}"}`)).to.equal(2.5);
    expect(sample(t, `cacheroute_engine_signal_age_seconds{endpoint="${e2.id}"}`)).to.equal(Number.POSITIVE_INFINITY);
  });

  it('mirrors the poller counters without double counting across scrapes', async () => {
    const { m, setScrapes, e0, e1 } = build();
    await m.text();
    await m.text();
    let t = await m.text();
    expect(sample(t, `cacheroute_engine_scrape_errors_total{endpoint="${e1.id}"}`)).to.equal(3);
    setScrapes([
      { endpointId: e0.id, scrapes: 12, errors: 0, ageMs: 10 },
      { endpointId: e1.id, scrapes: 12, errors: 5, ageMs: 10 },
    ]);
    t = await m.text();
    expect(sample(t, `cacheroute_engine_scrape_errors_total{endpoint="${e1.id}"}`)).to.equal(5);
    expect(sample(t, `cacheroute_engine_scrapes_total{endpoint="${e0.id}"}`)).to.equal(12);
  });

  it('counts engine-signal fallbacks by endpoint and reason', async () => {
    const { m, e1, e2 } = build();
    const t = await m.text();
    expect(sample(t, `cacheroute_engine_signal_fallbacks_total{endpoint="${e1.id}",reason="age"}`)).to.equal(2);
    expect(sample(t, `cacheroute_engine_signal_fallbacks_total{endpoint="${e2.id}",reason="missing"}`)).to.equal(1);
    expect(sample(t, 'cacheroute_engine_signal_fallbacks_total{endpoint="other",reason="frozen"}')).to.equal(1);
  });

  it('tracks edge streams and errors by closed kind', async () => {
    const { m } = build();
    const t = await m.text();
    expect(sample(t, 'cacheroute_extproc_streams_total')).to.equal(3);
    expect(sample(t, 'cacheroute_extproc_streams_active')).to.equal(1);
    expect(sample(t, 'cacheroute_extproc_stream_errors_total{kind="protocol"}')).to.equal(1);
    expect(sample(t, 'cacheroute_extproc_stream_errors_total{kind="transport"}')).to.equal(1);
    expect(sample(t, 'cacheroute_extproc_stream_errors_total{kind="no_endpoint"}')).to.equal(1);
    expect(sample(t, 'cacheroute_extproc_stream_errors_total{kind="aborted"}')).to.equal(1);
    expect(sample(t, 'cacheroute_extproc_stream_errors_total{kind="overloaded"}')).to.equal(0);
    expect(sample(t, 'cacheroute_extproc_stream_errors_total{kind="other"}')).to.equal(1);
  });

  it('keeps registries per instance (no global default registry)', async () => {
    const a = build().m;
    const b = new RouterMetrics({ endpointIds: [], blockChars: 64, charsPerToken: 4 });
    expect(sample(await b.text(), 'cacheroute_extproc_streams_total')).to.equal(0);
    expect(sample(await a.text(), 'cacheroute_extproc_streams_total')).to.equal(3);
  });

  it('follows Prometheus naming: cacheroute_ prefix, _total counters, base units', async () => {
    const { m } = build();
    const metrics = await m.registry.getMetricsAsJSON();
    for (const metric of metrics) {
      expect(metric.name).to.match(/^cacheroute_[a-z0-9_]+$/);
      if (String(metric.type) === 'counter') expect(metric.name).to.match(/_total$/);
      expect(metric.name).to.not.match(/_(ms|milliseconds|microseconds|us)(_|$)/);
    }
  });
});
