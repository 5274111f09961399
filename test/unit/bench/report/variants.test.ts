import { expect } from 'chai';
import type { ExperimentResult } from '../../../../bench/harness/run-experiment.js';
import { variantRatios } from '../../../../bench/report/variants.js';
import { summarizeRun } from '../../../../bench/stats/summarize.js';

const EMPTY = summarizeRun({ records: [], wallMs: 1000, maxLagMs: 0, engineIds: ['e1', 'e2'], idealReuse: 0.9 });

/** A finished run of `label` (cacheroute unless `kind` says otherwise) with the given numbers. */
function run(
  label: string,
  strategy: string,
  qps: number | null,
  p50: number,
  p99: number,
  tokHit: number,
  opts: { kind?: string; error?: string; success?: number } = {},
): ExperimentResult {
  return {
    id: `blk/scn@${qps}/${label}`,
    block: 'blk',
    scenario: { label: 'scn', kind: 'shared-prefix' },
    qps,
    contender: { label, kind: opts.kind ?? 'cacheroute', strategy, description: '' },
    engines: { label: '2x', count: 2, flags: {} },
    workload: { name: 'w', requests: 0, idealReuse: 0.9, params: {} },
    summary: {
      ...EMPTY,
      success: { ...EMPTY.success, successRate: opts.success ?? 1 },
      reqPerS: qps ?? 1,
      ttftMs: { ...EMPTY.ttftMs, p50, p99 },
      hits: { ...EMPTY.hits, requestHitRate: tokHit, engineTokenHitRate: tokHit },
    },
    routerDecision: null,
    notes: [],
    error: opts.error ?? null,
    startedAt: '',
    durationS: 0,
  };
}

describe('bench/report/variants', () => {
  it('compares each later contender of a strategy with the first one at the same rate', () => {
    const v = variantRatios([
      run('ca', 'cache-aware', 4, 100, 200, 0.6),
      run('ca+x', 'cache-aware', 4, 110, 150, 0.57, { success: 0.5 }),
      run('ca', 'cache-aware', 8, 200, 400, 0.6),
      run('ca+x', 'cache-aware', 8, 100, 800, 0.6),
      run('sglang', 'cache_aware', 4, 50, 60, 0.6, { kind: 'sglang-router' }),
      run('ph', 'prefix-hash', 4, 1, 1, 0.6),
    ]);
    expect(v.map((r) => [r.qps, r.variant, r.base])).to.deep.equal([
      [4, 'ca+x', 'ca'],
      [8, 'ca+x', 'ca'],
    ]);
    expect(v[0]?.ttftP50).to.be.closeTo(1.1, 1e-9);
    expect(v[0]?.ttftP99).to.be.closeTo(0.75, 1e-9);
    expect(v[0]?.successRate).to.equal(0.5);
    expect(v[0]?.engineTokenHitDelta).to.be.closeTo(-0.03, 1e-9);
    expect(v[0]?.engineTokenHit).to.be.closeTo(0.95, 1e-9);
    expect(v[1]?.ttftP50).to.equal(0.5);
    expect(v[1]?.ttftP99).to.equal(2);
  });

  it('skips failed runs, so a broken variant is compared with nothing rather than with itself', () => {
    const v = variantRatios([
      run('ca', 'cache-aware', 4, 100, 200, 0.6, { error: 'start failed' }),
      run('ca+x', 'cache-aware', 4, 110, 150, 0.57),
    ]);
    expect(v).to.deep.equal([]);
  });
});
