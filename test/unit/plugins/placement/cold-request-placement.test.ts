import { expect } from 'chai';
import { ColdRequestPlacement, type ColdPlacementOptions } from '../../../../src/plugins/placement/cold-request-placement.js';
import { MaxScorePicker } from '../../../../src/plugins/picker/max-score-picker.js';
import { RoundRobinPicker } from '../../../../src/plugins/picker/round-robin-picker.js';
import { setScratch } from '../../../../src/framework/cycle-scratch.js';
import { AFFINITY_EVIDENCE, IMBALANCE_DROPPED } from '../../../../src/plugins/shared/cycle-keys.js';
import { seededRng } from '../../../../src/util/rng.js';
import { candidate, candidates, cycle } from '../../builders.js';

function placement(o: Partial<ColdPlacementOptions> = {}): ColdRequestPlacement {
  return new ColdRequestPlacement('cold', { minMatch: 0, sessionsAreWarm: true, spread: true, staleAfterMs: 1000, reason: 'load', ...o });
}

describe('cold-request-placement (order: prefill-queue)', () => {
  const cold = placement({ spread: false });
  const p = new MaxScorePicker('max');
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
    const r = cold.place(withEvidence([0, 0, 0]), cs(), [0, 1, 0.5]);
    expect(r!.order).to.deep.equal([0, 1, 2]);
    expect(r!.reason).to.equal('cold');
  });

  it('keeps the imbalance and spill labels, and leaves requests with a session key to the scores', () => {
    const st = withEvidence([0, 0, 0, 9]);
    setScratch(st, IMBALANCE_DROPPED, [candidate(3).endpoint]);
    const r = cold.place(st, cs(), [0, 1, 0.5]);
    expect(r!.order[0]).to.equal(0, 'the remaining candidates are cold: shortest prefill queue');
    expect(r!.reason).to.equal('imbalance');
    const session = cycle({ sessionKey: 'conversation-1' });
    setScratch(session, AFFINITY_EVIDENCE, { matchedByEndpoint: new Uint32Array(3), totalBlocks: 4 });
    expect(cold.place(session, cs(), [0, 1, 0.5])).to.equal(undefined, 'left to the scores');
  });

  it('leaves warm requests and cycles without affinity evidence to the scores', () => {
    expect(cold.place(withEvidence([0, 3, 0]), cs(), [0, 1, 0.5])).to.equal(undefined);
    expect(cold.place(cycle(), cs(), [0, 1, 0.5])).to.equal(undefined);
    expect(p.pick(withEvidence([0, 0, 0]), cs(), [0, 1, 0.5]).order).to.deep.equal([1, 2, 0], 'the picker alone orders by the scores');
  });

  it('raises the prefill queue to a fresh engine waiting count, and ties go at random', () => {
    const engine = [candidate(0, { prefillingRequests: 0, waiting: 3, metricsAgeMs: 5 }), candidate(1, { prefillingRequests: 1 })];
    expect(cold.place(withEvidence([0, 0]), engine, [1, 0])!.order).to.deep.equal([1, 0]);
    const firsts = new Set<number>();
    const rng = seededRng(2);
    for (let i = 0; i < 40; i++) {
      const st = cycle({}, rng);
      setScratch(st, AFFINITY_EVIDENCE, { matchedByEndpoint: new Uint32Array(3), totalBlocks: 4 });
      firsts.add(cold.place(st, candidates(3), [1, 0, 0])!.order[0]!);
    }
    expect(firsts.size).to.equal(3);
  });
});

describe('spread and hand-off', () => {
  it('spreads equal prefill queues over the fewest recent cold placements', () => {
    const cold = placement();
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      const st = cycle({}, seededRng(i + 1));
      setScratch(st, AFFINITY_EVIDENCE, { matchedByEndpoint: new Uint32Array(4), totalBlocks: 4 });
      seen.push(cold.place(st, candidates(4), [0, 0, 0, 0])!.order[0]!);
    }
    expect([...seen].sort()).to.deep.equal([0, 0, 1, 1, 2, 2, 3, 3]);
  });

  it('with minMatch, counts a request as cold below that share of its blocks and hands it to the picker', () => {
    const rr = new RoundRobinPicker('rr');
    const cold = placement({ minMatch: 0.25, sessionsAreWarm: false, picker: rr, note: 'cold balanced' });
    const st = cycle({ sessionKey: 's' });
    setScratch(st, AFFINITY_EVIDENCE, { matchedByEndpoint: [2, 0, 0], totalBlocks: 10 });
    const r = cold.place(st, candidates(3), [1, 0, 0]);
    expect(r?.reason).to.equal('round-robin');
    expect(st.notes).to.include('cold balanced');
    const warm = cycle();
    setScratch(warm, AFFINITY_EVIDENCE, { matchedByEndpoint: [3, 0, 0], totalBlocks: 10 });
    expect(cold.place(warm, candidates(3), [1, 0, 0])).to.equal(undefined);
  });
});
