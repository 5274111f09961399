import { expect } from 'chai';
import { QueueScorer } from '../../../../src/plugins/scorer/queue-scorer.js';
import { candidate, candidates, cycle } from '../../scheduling/builders.js';

describe('QueueScorer', () => {
  const eff = new QueueScorer('q', 'effective', 1000);

  it('is neutral (1 for all) when every queue is equal', () => {
    expect(Array.from(eff.score(cycle(), candidates(3, [4, 4, 4])))).to.deep.equal([1, 1, 1]);
    expect(Array.from(eff.score(cycle(), candidates(2)))).to.deep.equal([1, 1]);
  });

  it('min-max normalises: least loaded 1, most loaded 0', () => {
    expect(Array.from(eff.score(cycle(), candidates(3, [2, 6, 4])))).to.deep.equal([1, 0, 0.5]);
  });

  it('with a softQueue floor, small spreads move the score in proportion only', () => {
    const soft = new QueueScorer('q', 'effective', 1000, 8);
    expect(Array.from(soft.score(cycle(), candidates(3, [2, 3, 2])))).to.deep.equal([1, 1 - 1 / 8, 1]);
    // a spread at or beyond the floor is plain min-max again
    expect(Array.from(soft.score(cycle(), candidates(3, [0, 16, 8])))).to.deep.equal([1, 0, 0.5]);
  });

  it('uses fresh engine queue figures in effective mode only', () => {
    const cs = [candidate(0, { inflightRequests: 1 }), candidate(1, { inflightRequests: 1, waiting: 4, running: 1, metricsAgeMs: 10 })];
    expect(Array.from(eff.score(cycle(), cs))).to.deep.equal([1, 0]);
    expect(Array.from(new QueueScorer('q', 'inflight', 1000).score(cycle(), cs))).to.deep.equal([1, 1]);
    expect(Array.from(new QueueScorer('q', 'effective', 5).score(cycle(), cs))).to.deep.equal([1, 1]);
  });
});
