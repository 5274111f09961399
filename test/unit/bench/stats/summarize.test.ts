import { expect } from 'chai';
import { ZERO_COUNTERS, type EngineCounters } from '../../../../bench/stats/engine-counters.js';
import { hitRates, successAccounting, summarizeRun } from '../../../../bench/stats/summarize.js';
import { requestRecord } from '../request-record.js';

const rec = requestRecord;

describe('bench/stats/summarize', () => {
  it('counts every request and keeps failures in the denominator', () => {
    const records = [
      rec({ id: 'a' }),
      rec({ id: 'b', outcome: 'http-error', status: 503, ttftMs: null, e2eMs: null }),
      rec({ id: 'c', outcome: 'timeout', status: 200, ttftMs: 50, e2eMs: null }),
      rec({ id: 'd', outcome: 'not-sent', status: 0, ttftMs: null, e2eMs: null, engine: null }),
    ];
    const s = successAccounting(records);
    expect(s.requests).to.equal(4);
    expect(s.ok).to.equal(1);
    expect(s.failed).to.equal(3);
    expect(s.successRate).to.equal(0.25);
    expect(s.outcomes).to.deep.equal({ ok: 1, 'http-error': 1, timeout: 1, 'not-sent': 1 });
    expect(s.failedStatuses).to.deep.equal({ '503': 1, '200': 1 });
  });

  it('latency percentiles use successful requests only', () => {
    const records = [
      rec({ id: 'a', ttftMs: 10 }),
      rec({ id: 'b', ttftMs: 30 }),
      rec({ id: 'c', outcome: 'timeout', ttftMs: 5000, e2eMs: null }),
    ];
    const s = summarizeRun({ records, wallMs: 2000, maxLagMs: 0, engineIds: ['e1'], idealReuse: 0.9 });
    expect(s.ttftMs.count).to.equal(2);
    expect(s.ttftMs.p50).to.equal(20);
    expect(s.ttftMs.max).to.equal(30);
    expect(s.reqPerS).to.equal(1);
    expect(s.outTokPerS).to.equal(10);
  });

  it('splits TTFT into cold (cached_tokens 0) and hit (cached_tokens > 0) requests', () => {
    const records = [
      rec({ id: 'a', ttftMs: 300, cachedTokens: 0 }),
      rec({ id: 'b', ttftMs: 40, cachedTokens: 1408 }),
      rec({ id: 'c', ttftMs: 60, cachedTokens: 128 }),
      rec({ id: 'd', ttftMs: 90, cachedTokens: null }),
      rec({ id: 'e', outcome: 'timeout', ttftMs: 5000, e2eMs: null, cachedTokens: 0 }),
    ];
    const s = summarizeRun({ records, wallMs: 1000, maxLagMs: 0, engineIds: ['e1'], idealReuse: 0.9 });
    expect(s.ttftColdMs.count).to.equal(1);
    expect(s.ttftColdMs.p50).to.equal(300);
    expect(s.ttftHitMs.count).to.equal(2);
    expect(s.ttftHitMs.max).to.equal(60);
  });

  it('request-level hit rate, cached fraction and ceiling on known inputs', () => {
    const records = [
      rec({ id: 'a', cachedTokens: 0, reusableTokens: 0 }),
      rec({ id: 'b', cachedTokens: 896 }),
      rec({ id: 'c', cachedTokens: 448 }),
      rec({ id: 'd', cachedTokens: null }), // did not report usage: excluded
      rec({ id: 'e', outcome: 'http-error', cachedTokens: null }),
    ];
    const h = hitRates(records);
    expect(h.reporting).to.equal(3);
    expect(h.requestHitRate).to.be.closeTo(2 / 3, 1e-12);
    expect(h.requestHitCeiling).to.be.closeTo(2 / 3, 1e-12);
    expect(h.cachedFraction).to.be.closeTo((896 + 448) / 3000, 1e-12);
    expect(h.cachedOfReusable).to.be.closeTo((896 + 448) / 1800, 1e-12);
    expect(h.engineTokenHitRate).to.equal(null);
  });

  it('token-level hit rate comes from engine counter deltas', () => {
    const d = (hits: number, queries: number): EngineCounters => ({ ...ZERO_COUNTERS, prefixHitTokens: hits, prefixQueryTokens: queries });
    const h = hitRates(
      [],
      new Map([
        ['e1', d(300, 1000)],
        ['e2', d(100, 1000)],
      ]),
    );
    expect(h.engineTokenHitRate).to.equal(0.2);
  });

  it('load spread counts idle engines and prefers engine counters when every engine has them', () => {
    const records = [rec({ id: 'a', engine: 'e1' }), rec({ id: 'b', engine: 'e1' }), rec({ id: 'c', engine: 'e2' })];
    const fromResponses = summarizeRun({ records, wallMs: 1000, maxLagMs: 0, engineIds: ['e1', 'e2', 'e3', 'e4'], idealReuse: 0 });
    expect(fromResponses.spread.source).to.equal('responses');
    // 2 of 3 requests on one of 4 engines: max 2 / mean 0.75
    expect(fromResponses.spread.requestsMaxOverMean).to.be.closeTo(2 / 0.75, 1e-12);
    expect(fromResponses.spread.perEngine['e3']).to.deep.equal({ requests: 0, promptTokens: 0 });

    const c = (requests: number, promptTokens: number): EngineCounters => ({ ...ZERO_COUNTERS, requests, promptTokens });
    const deltas = new Map([
      ['e1', c(5, 5000)],
      ['e2', c(5, 3000)],
    ]);
    const fromMetrics = summarizeRun({ records, wallMs: 1000, maxLagMs: 0, engineIds: ['e1', 'e2'], engineDeltas: deltas, idealReuse: 0 });
    expect(fromMetrics.spread.source).to.equal('engine-metrics');
    expect(fromMetrics.spread.requestsMaxOverMean).to.equal(1);
    expect(fromMetrics.spread.promptTokensMaxOverMean).to.equal(1.25);
  });

  it('a run with nothing successful has null latencies and zero throughput', () => {
    const s = summarizeRun({
      records: [rec({ outcome: 'not-sent', ttftMs: null, e2eMs: null, engine: null })],
      wallMs: 0,
      maxLagMs: 0,
      engineIds: ['e1'],
      idealReuse: 0,
    });
    expect(s.success.successRate).to.equal(0);
    expect(s.ttftMs.p99).to.equal(null);
    expect(s.reqPerS).to.equal(0);
    expect(s.spread.requestsMaxOverMean).to.equal(null);
  });
});
