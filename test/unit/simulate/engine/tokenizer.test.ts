import { expect } from 'chai';
import fc from 'fast-check';
import { countTokens, tokenize } from '../../../../src/simulate/engine/tokenizer.js';

describe('sim-engine tokenizer', () => {
  it('cuts text into chars-per-token chunks, last one shorter', () => {
    expect(tokenize('', 4)).to.deep.equal([]);
    expect(tokenize('abcdefghij', 4)).to.have.length(3);
    expect(tokenize('abcdefghij', 1)).to.have.length(10);
    expect(countTokens('abcdefghij', 4)).to.equal(3);
  });

  it('is deterministic and maps equal chunks to equal ids', () => {
    expect(tokenize('abcdabcd', 4)).to.deep.equal(tokenize('abcdabcd', 4));
    const [a, b] = tokenize('abcdabcd', 4);
    expect(a).to.equal(b);
    expect(tokenize('abcd', 4)[0]).to.not.equal(tokenize('abce', 4)[0]);
    for (const id of tokenize('The quick brown fox jumps over the lazy dog', 4)) {
      expect(id).to.be.within(0, 0x7fffffff);
    }
  });

  it('is prefix-stable: a shared text prefix of L chars gives floor(L/cpt) shared leading tokens (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 200 }),
        fc.string({ maxLength: 50 }),
        fc.string({ maxLength: 50 }),
        fc.integer({ min: 1, max: 8 }),
        (p, x, y, cpt) => {
          const a = tokenize(p + x, cpt);
          const b = tokenize(p + y, cpt);
          const shared = Math.floor(p.length / cpt);
          expect(a.slice(0, shared)).to.deep.equal(b.slice(0, shared));
          expect(a.length).to.equal(countTokens(p + x, cpt));
        },
      ),
      { seed: 7, numRuns: 300 },
    );
  });
});
