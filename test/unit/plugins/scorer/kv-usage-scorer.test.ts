import { expect } from 'chai';
import { KvUsageScorer } from '../../../../src/plugins/scorer/kv-usage-scorer.js';
import { candidate, cycle } from '../../builders.js';

describe('KvUsageScorer', () => {
  const s = new KvUsageScorer('kv', 1000);
  const scores = (cs: ReturnType<typeof candidate>[]): number[] => Array.from(s.score(cycle(), cs)).map((v) => Math.round(v * 1000) / 1000);

  it('is neutral (1 for all) when nobody reports KV usage', () => {
    expect(scores([candidate(0), candidate(1)])).to.deep.equal([1, 1]);
  });

  it('scores 1 - kvUsage for fresh figures, clamped to [0,1]', () => {
    expect(scores([candidate(0, { kvUsage: 0.25, metricsAgeMs: 5 }), candidate(1, { kvUsage: 1.7, metricsAgeMs: 5 })])).to.deep.equal([
      0.75, 0,
    ]);
  });

  it('gives candidates without a fresh figure the mean of the known scores', () => {
    const cs = [
      candidate(0, { kvUsage: 0.2, metricsAgeMs: 5 }),
      candidate(1, { kvUsage: 0.6, metricsAgeMs: 5 }),
      candidate(2),
      candidate(3, { kvUsage: 0.0, metricsAgeMs: 5000 }),
    ];
    expect(scores(cs)).to.deep.equal([0.8, 0.4, 0.6, 0.6]);
  });
});
