import { expect } from 'chai';
import { PowerOfTwoPicker } from '../../../../src/plugins/picker/power-of-two.js';
import { seededRng } from '../../../../src/util/rng.js';
import { loadedCandidates, loaded, state } from '../../builders.js';

const p2c = (unit: 'requests' | 'tokens' = 'requests') =>
  new PowerOfTwoPicker('p2c', { unit, maxMetricsAgeMs: 1000, tokensPerRequest: 1000 });

describe('load/power-of-two picker', () => {
  it('always picks the less loaded of its two distinct samples and orders every candidate once', () => {
    const rng = seededRng(42);
    const cs = loadedCandidates([5, 1, 9, 3, 7, 0]);
    for (let t = 0; t < 200; t++) {
      const st = state(undefined, 0, rng);
      const r = p2c().pick(st, cs);
      expect([...r.order].sort()).to.deep.equal([0, 1, 2, 3, 4, 5]);
      const [a, b] = r.order as [number, number];
      expect(a).to.not.equal(b);
      expect(cs[a]!.load.inflightRequests).to.be.at.most(cs[b]!.load.inflightRequests);
      const rest = r.order.slice(2).map((i) => cs[i]!.load.inflightRequests);
      expect(rest).to.deep.equal(
        [...rest].sort((x, y) => x - y),
        'fallbacks by ascending load',
      );
    }
  });

  it('sends the idle engine about half the traffic (it is in the sample half the time) and never the busiest', () => {
    const rng = seededRng(7);
    const cs = loadedCandidates([0, 10, 10, 20]);
    const wins = [0, 0, 0, 0];
    for (let t = 0; t < 2000; t++) wins[p2c().pick(state(undefined, 0, rng), cs).order[0]!]!++;
    expect(wins[0]! / 2000).to.be.within(0.44, 0.56);
    expect(wins[3]).to.equal(0);
  });

  it('spreads equal loads instead of piling onto one engine (random tie-break)', () => {
    const rng = seededRng(3);
    const cs = loadedCandidates([2, 2, 2, 2]);
    const wins = [0, 0, 0, 0];
    for (let t = 0; t < 2000; t++) wins[p2c().pick(state(undefined, 0, rng), cs).order[0]!]!++;
    for (const w of wins) expect(w / 2000).to.be.within(0.2, 0.3);
  });

  it('compares both samples in the configured unit', () => {
    // Engine 0: few requests but a lot of tokens; engine 1: the reverse.
    const cs = loadedCandidates([loaded(1, { pendingTokens: 50_000 }), loaded(6, { pendingTokens: 600 })]);
    expect(p2c('requests').pick(state(), cs).order[0]).to.equal(0);
    expect(p2c('tokens').pick(state(), cs).order[0]).to.equal(1);
  });

  it('is deterministic for a seed and handles one candidate', () => {
    const cs = loadedCandidates([1, 1, 1, 1, 1]);
    const run = (seed: number) =>
      Array.from(
        { length: 20 },
        (
          (rng) => () =>
            p2c().pick(state(undefined, 0, rng), cs).order[0]
        )(seededRng(seed)),
      );
    expect(run(9)).to.deep.equal(run(9));
    expect(p2c().pick(state(), loadedCandidates([4])).order).to.deep.equal([0]);
  });
});
