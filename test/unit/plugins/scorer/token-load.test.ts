import { expect } from 'chai';
import { TokenLoadScorer } from '../../../../src/plugins/scorer/token-load.js';
import { loadedCandidates, loaded, state } from '../../builders.js';

const cs = (tokens: number[]) => loadedCandidates(tokens.map((t) => loaded(1, { pendingTokens: t })));

describe('load/token-load scorer', () => {
  it('is neutral (all 1) when loads are equal', () => {
    expect([...new TokenLoadScorer('t').score(state(), cs([500, 500, 500]))]).to.deep.equal([1, 1, 1]);
  });

  it('scores the least loaded 1 and the most loaded 0 when the spread exceeds softTokens', () => {
    const s = [...new TokenLoadScorer('t', { softTokens: 100 }).score(state(), cs([1000, 6000, 11000]))];
    expect(s).to.deep.equal([1, 0.5, 0]);
  });

  it('keeps small differences small', () => {
    const s = new TokenLoadScorer('t', { softTokens: 2048 }).score(state(), cs([100, 101]));
    expect(s[0]).to.equal(1);
    expect(s[1]).to.be.greaterThan(0.999);
  });

  it('ranks by tokens, not by request count', () => {
    const c = loadedCandidates([loaded(10, { pendingTokens: 100 }), loaded(1, { pendingTokens: 40_000 })]);
    const s = new TokenLoadScorer('t').score(state(), c);
    expect(s[0]).to.be.greaterThan(s[1]!);
  });
});
