import { expect } from 'chai';
import { MaxScorePicker } from '../../../../src/plugins/picker/max-score-picker.js';
import { AFFINITY_EVIDENCE, IMBALANCE_DROPPED, setScratch } from '../../../../src/scheduling/cycle-scratch.js';
import { seededRng } from '../../../../src/util/rng.js';
import { candidate, candidates, cycle } from '../../scheduling/builders.js';

describe('MaxScorePicker', () => {
  const p = new MaxScorePicker('max', 'load');

  it('orders by total, best first', () => {
    expect(p.pick(cycle(), candidates(4), [0.5, 3, 1, 2]).order).to.deep.equal([1, 3, 2, 0]);
  });

  it('breaks exact ties at random (seeded), not always towards the first', () => {
    const firsts = new Set<number>();
    const rng = seededRng(5);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 400; i++) {
      const first = p.pick(cycle({}, rng), candidates(4), [1, 1, 1, 1]).order[0]!;
      firsts.add(first);
      counts[first]!++;
    }
    expect(firsts.size).to.equal(4);
    for (const c of counts) expect(c).to.be.within(60, 140);
    // Ties only among the best: a strictly worse candidate is never first.
    for (let i = 0; i < 50; i++) expect(p.pick(cycle({}, rng), candidates(3), [2, 2, 1]).order[2]).to.equal(2);
  });

  it('is reproducible from the seed', () => {
    const run = (seed: number): number[] => {
      const rng = seededRng(seed);
      return Array.from({ length: 20 }, () => p.pick(cycle({}, rng), candidates(5), [1, 1, 1, 1, 1]).order[0]!);
    };
    expect(run(3)).to.deep.equal(run(3));
    expect(run(3)).to.not.deep.equal(run(4));
  });

  it('labels with the default, the hint, or the affinity evidence', () => {
    expect(p.pick(cycle(), candidates(2), [1, 0]).reason).to.equal('load');
    const hinted = cycle();
    hinted.reasonHint = 'session';
    expect(p.pick(hinted, candidates(2), [1, 0]).reason).to.equal('session');
    const ev = cycle();
    setScratch(ev, AFFINITY_EVIDENCE, { matchedByEndpoint: [0, 4], totalBlocks: 4 });
    expect(p.pick(ev, candidates(2), [0, 1]).reason).to.equal('affinity');
    // A hotspot spill hint wins over the evidence: the filter already chose the engine.
    const spill = cycle();
    setScratch(spill, AFFINITY_EVIDENCE, { matchedByEndpoint: [0, 4], totalBlocks: 4 });
    spill.reasonHint = 'spill';
    expect(p.pick(spill, candidates(2), [0, 1]).reason).to.equal('spill');
  });

  describe('coldOrder: prefill-queue', () => {
    const cold = new MaxScorePicker('max', 'load', 'prefill-queue', 1000);
    // Engine 0: 4 in flight, all past their first byte; 1: one waiting for prefill; 2: two.
    const cs = () => [
      candidate(0, { inflightRequests: 4, prefillingRequests: 0 }),
      candidate(1, { inflightRequests: 1, prefillingRequests: 1 }),
      candidate(2, { inflightRequests: 2, prefillingRequests: 2 }),
    ];
    const withEvidence = (matched: number[]) => {
      const st = cycle();
      setScratch(st, AFFINITY_EVIDENCE, { matchedByEndpoint: Uint32Array.from(matched), totalBlocks: 10 });
      return st;
    };

    it('places a cold request on the shortest prefill queue, whatever the scores say', () => {
      const r = cold.pick(withEvidence([0, 0, 0]), cs(), [0, 1, 0.5]);
      expect(r.order).to.deep.equal([0, 1, 2]);
      expect(r.reason).to.equal('cold');
    });

    it('keeps the imbalance and spill labels, and leaves requests with a session key to the scores', () => {
      const st = withEvidence([0, 0, 0, 9]);
      setScratch(st, IMBALANCE_DROPPED, [candidate(3).endpoint]);
      const r = cold.pick(st, cs(), [0, 1, 0.5]);
      expect(r.order[0]).to.equal(0, 'the remaining candidates are cold: shortest prefill queue');
      expect(r.reason).to.equal('imbalance');
      const session = cycle({ sessionKey: 'conversation-1' });
      setScratch(session, AFFINITY_EVIDENCE, { matchedByEndpoint: new Uint32Array(3), totalBlocks: 4 });
      expect(cold.pick(session, cs(), [0, 1, 0.5]).order).to.deep.equal([1, 2, 0]);
    });

    it('leaves warm requests and cycles without affinity evidence to the scores', () => {
      expect(cold.pick(withEvidence([0, 3, 0]), cs(), [0, 1, 0.5]).order).to.deep.equal([1, 2, 0]);
      expect(cold.pick(cycle(), cs(), [0, 1, 0.5]).order).to.deep.equal([1, 2, 0]);
      expect(p.pick(withEvidence([0, 0, 0]), cs(), [0, 1, 0.5]).order).to.deep.equal([1, 2, 0], 'coldOrder scores (default)');
    });

    it('raises the prefill queue to a fresh engine waiting count, and ties go at random', () => {
      const engine = [candidate(0, { prefillingRequests: 0, waiting: 3, metricsAgeMs: 5 }), candidate(1, { prefillingRequests: 1 })];
      expect(cold.pick(withEvidence([0, 0]), engine, [1, 0]).order).to.deep.equal([1, 0]);
      const firsts = new Set<number>();
      const rng = seededRng(2);
      for (let i = 0; i < 40; i++) {
        const st = cycle({}, rng);
        setScratch(st, AFFINITY_EVIDENCE, { matchedByEndpoint: new Uint32Array(3), totalBlocks: 4 });
        firsts.add(cold.pick(st, candidates(3), [1, 0, 0]).order[0]!);
      }
      expect(firsts.size).to.equal(3);
    });
  });
});
