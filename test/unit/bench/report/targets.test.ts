import { expect } from 'chai';
import type { ExperimentResult } from '../../../../bench/harness/run-experiment.js';
import { addedLatency, checkTargets, saturationQps } from '../../../../bench/report/targets.js';
import { summarizeRun } from '../../../../bench/stats/summarize.js';

interface Fake {
  block?: string;
  kind?: string;
  strategy: string;
  scenario?: string;
  scenarioKind?: string;
  ratio?: number;
  qps?: number | null;
  hit?: number;
  tokHit?: number;
  p50?: number;
  p99?: number;
  success?: number;
  reqPerS?: number;
}

function result(f: Fake): ExperimentResult {
  const base = summarizeRun({ records: [], wallMs: 1000, maxLagMs: 0, engineIds: ['e1', 'e2', 'e3', 'e4'], idealReuse: 0.9 });
  const summary = {
    ...base,
    success: { ...base.success, successRate: f.success ?? 1 },
    reqPerS: f.reqPerS ?? f.qps ?? 0,
    ttftMs: { ...base.ttftMs, p50: f.p50 ?? 100, p99: f.p99 ?? 200 },
    hits: { ...base.hits, requestHitRate: f.hit ?? 0.5, requestHitCeiling: 1, engineTokenHitRate: f.tokHit ?? 0.5 },
  };
  const kind = f.kind ?? 'cacheroute';
  return {
    id: `${f.block ?? 'b'}/${f.scenario ?? 's'}/${kind}-${f.strategy}`,
    block: f.block ?? 'b',
    scenario: { label: f.scenario ?? 's', kind: f.scenarioKind ?? 'sharing-ratio' },
    qps: f.qps ?? null,
    contender: { label: `${kind}-${f.strategy}`, kind, strategy: f.strategy, description: '' },
    engines: { label: '4x', count: 4, flags: {} },
    workload: { name: 'w', requests: 0, idealReuse: 0.9, params: f.ratio === undefined ? {} : { ratio: f.ratio } },
    summary,
    routerDecision: null,
    notes: [],
    error: null,
    startedAt: '',
    durationS: 0,
  };
}

const status = (checks: ReturnType<typeof checkTargets>, prefix: string): string[] =>
  checks.filter((c) => c.target.startsWith(prefix)).map((c) => c.status);

describe('bench/report/targets', () => {
  it('round-robin ≈ 1/N passes inside ±0.5/N and fails outside; 0% sharing is not checked', () => {
    const checks = checkTargets([
      result({ strategy: 'round-robin', ratio: 0.5, hit: 0.3 }),
      result({ strategy: 'round-robin', ratio: 0.9, hit: 0.45 }),
      result({ strategy: 'round-robin', ratio: 0, hit: 0 }),
    ]);
    expect(status(checks, 'round-robin')).to.deep.equal(['PASS', 'FAIL']);
  });

  it('cache-aware hit goals are 90% at 50% and 97% at 90% sharing', () => {
    const checks = checkTargets([
      result({ strategy: 'cache-aware', ratio: 0.5, hit: 0.9 }),
      result({ strategy: 'cache-aware', ratio: 0.9, hit: 0.96 }),
    ]);
    expect(status(checks, 'cache-aware request-level')).to.deep.equal(['PASS', 'FAIL']);
  });

  it('hot prefix needs half the p99, hit within 5 points and full success', () => {
    const hot = (strategy: string, p99: number, tokHit: number, success = 1): ExperimentResult =>
      result({ strategy, scenarioKind: 'hot-prefix', scenario: 'hot', p99, tokHit, success });
    expect(status(checkTargets([hot('cache-aware', 400, 0.62), hot('prefix-hash', 900, 0.66)]), 'hot prefix')).to.deep.equal(['PASS']);
    expect(status(checkTargets([hot('cache-aware', 500, 0.62), hot('prefix-hash', 900, 0.66)]), 'hot prefix')).to.deep.equal(['FAIL']);
    expect(status(checkTargets([hot('cache-aware', 400, 0.55), hot('prefix-hash', 900, 0.66)]), 'hot prefix')).to.deep.equal(['FAIL']);
    expect(status(checkTargets([hot('cache-aware', 400, 0.62, 0.99), hot('prefix-hash', 900, 0.66)]), 'hot prefix')).to.deep.equal([
      'FAIL',
    ]);
  });

  it('saturation is the highest rate some contender keeps up with', () => {
    const sweep = [
      result({ strategy: 'a', qps: 4 }),
      result({ strategy: 'a', qps: 8, reqPerS: 7.5 }),
      result({ strategy: 'a', qps: 16, reqPerS: 10 }),
      result({ strategy: 'b', qps: 16, success: 0.9 }),
    ];
    expect(saturationQps(sweep)).to.equal(8);
  });

  it('versus peers: compares with the best peer per rate, up to saturation, with a 10% margin', () => {
    const at = (q: number, kind: string, strategy: string, p50: number, p99: number, extra: Partial<Fake> = {}): ExperimentResult =>
      result({ block: 'sweep', scenario: 'moreh', scenarioKind: 'shared-prefix', qps: q, kind, strategy, p50, p99, ...extra });
    const checks = checkTargets([
      at(4, 'cacheroute', 'cache-aware', 105, 210),
      at(4, 'sglang-router', 'cache_aware', 100, 300),
      at(4, 'vllm-router', 'cache_aware', 120, 200),
      at(8, 'cacheroute', 'cache-aware', 100, 500),
      at(8, 'sglang-router', 'cache_aware', 100, 200),
      at(8, 'vllm-router', 'cache_aware', 100, 200),
      // beyond saturation (nobody keeps up): not checked
      at(16, 'cacheroute', 'cache-aware', 9000, 9000, { success: 0.5 }),
      at(16, 'sglang-router', 'cache_aware', 100, 200, { reqPerS: 8 }),
    ]);
    const peers = checks.filter((c) => c.target.startsWith('sweep/moreh'));
    expect(peers.map((c) => c.status)).to.deep.equal(['PASS', 'FAIL']);
    expect(peers[1]?.detail).to.contain('p99');
  });

  it('added latency pairs cacheroute round-robin with Envoy round-robin at the lowest rate', () => {
    const a = addedLatency([
      result({ strategy: 'round-robin', qps: 8, p50: 150 }),
      result({ strategy: 'round-robin', qps: 2, p50: 104 }),
      result({ kind: 'envoy-only', strategy: 'round-robin', qps: 2, p50: 100 }),
      result({ kind: 'envoy-only', strategy: 'round-robin', qps: 8, p50: 120 }),
    ]);
    expect(a).to.have.length(1);
    expect(a[0]?.qps).to.equal(2);
    expect(a[0]?.deltaMs).to.equal(4);
  });
});
