import { expect } from 'chai';
import { QueueScorer } from '../../../../src/plugins/scorer/queue-scorer.js';
import { candidate, candidates, cycle } from '../../builders.js';

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

  it('prefill mode counts only requests not past their first byte, raised to a fresh engine waiting queue', () => {
    const pre = new QueueScorer('q', 'prefill', 1000);
    // Engine 0 has 6 in flight but all decoding; engine 1 has 2 in flight, both still in prefill.
    const cs = [candidate(0, { inflightRequests: 6, prefillingRequests: 0 }), candidate(1, { inflightRequests: 2, prefillingRequests: 2 })];
    expect(Array.from(pre.score(cycle(), cs))).to.deep.equal([1, 0]);
    expect(Array.from(eff.score(cycle(), cs))).to.deep.equal([0, 1], 'the in-flight view prefers the opposite engine');
    const engine = [
      candidate(0, { inflightRequests: 1, prefillingRequests: 0, waiting: 3, metricsAgeMs: 10 }),
      candidate(1, { inflightRequests: 1, prefillingRequests: 1 }),
    ];
    expect(Array.from(pre.score(cycle(), engine))).to.deep.equal([0, 1]);
    // Without first-byte accounting the prefill queue is the in-flight count.
    expect(Array.from(pre.score(cycle(), candidates(2, [1, 3])))).to.deep.equal([1, 0]);
  });
});
