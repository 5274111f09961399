import { expect } from 'chai';
import fc from 'fast-check';
import { formatDecisionSummary, parseDecisionSummary } from '../../../src/extproc/decision-header.js';
import { sampleDecision as decision, loopbackEndpoint as endpoint } from '../builders.js';

describe('decision-summary', () => {
  it('formats endpoint, reason, match and strategy', () => {
    expect(formatDecisionSummary(decision())).to.equal('ep=127.0.0.1:8001;reason=affinity;match=12/14;strategy=cache-aware');
  });

  it('reflects a cold decision with no match', () => {
    const d = decision({ endpoint: endpoint(3), reason: 'cold', matchedBlocks: 0, totalBlocks: 5, strategy: 'least-request' });
    expect(parseDecisionSummary(formatDecisionSummary(d))).to.deep.equal({
      ep: '127.0.0.1:8004',
      reason: 'cold',
      match: '0/5',
      strategy: 'least-request',
    });
  });

  it('always yields a header-safe value that round-trips its fields', () => {
    fc.assert(
      fc.property(fc.string(), fc.nat(1000), fc.nat(1000), (strategy, m, t) => {
        const s = formatDecisionSummary(decision({ strategy, matchedBlocks: m, totalBlocks: t }));
        expect(s).to.match(/^[\x21-\x7e]*$/);
        const parsed = parseDecisionSummary(s);
        expect(Object.keys(parsed)).to.deep.equal(['ep', 'reason', 'match', 'strategy']);
        expect(parsed['match']).to.equal(`${m}/${t}`);
      }),
      { seed: 7, numRuns: 200 },
    );
  });
});
