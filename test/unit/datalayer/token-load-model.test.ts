import { expect } from 'chai';
import { OutputLengthLearner, TokenLoadModel } from '../../../src/datalayer/token-load-model.js';

describe('load/load-model', () => {
  describe('OutputLengthLearner', () => {
    it('uses the prior until it has samples, then the running mean while warming up', () => {
      const l = new OutputLengthLearner({ priorTokens: 300, alpha: 0.1, maxModels: 8 });
      expect(l.expected('m')).to.equal(300);
      l.observe('m', 100);
      expect(l.expected('m')).to.equal(100);
      l.observe('m', 200);
      expect(l.expected('m')).to.be.closeTo(150, 1e-9);
      l.observe('m', 600);
      expect(l.expected('m')).to.be.closeTo(300, 1e-9);
      expect(l.expected('other')).to.equal(300);
    });

    it('converges to a new level as an EWMA after warm-up', () => {
      const l = new OutputLengthLearner({ priorTokens: 1, alpha: 0.2, maxModels: 8 });
      for (let i = 0; i < 50; i++) l.observe('m', 100);
      for (let i = 0; i < 30; i++) l.observe('m', 1000);
      expect(l.expected('m')).to.be.greaterThan(990);
      expect(l.stats()[0]).to.include({ model: 'm', samples: 80 });
    });

    it('caps the expectation by the request max_tokens and ignores bad observations', () => {
      const l = new OutputLengthLearner({ priorTokens: 500, alpha: 0.1, maxModels: 8 });
      expect(l.expected('m', 64)).to.equal(64);
      expect(l.expected('m', 0)).to.equal(500);
      l.observe('m', Number.NaN);
      l.observe('m', -5);
      expect(l.stats()).to.have.length(0);
    });

    it('tracks a bounded number of models, dropping the least recently seen', () => {
      const l = new OutputLengthLearner({ priorTokens: 7, alpha: 0.1, maxModels: 2 });
      l.observe('a', 1);
      l.observe('b', 2);
      l.observe('a', 1);
      l.observe('c', 3);
      expect(
        l
          .stats()
          .map((s) => s.model)
          .sort(),
      ).to.deep.equal(['a', 'c']);
      expect(l.expected('b')).to.equal(7);
    });
  });

  describe('TokenLoadModel', () => {
    it('counts uncached prefill plus expected decode per endpoint', () => {
      const m = new TokenLoadModel(new OutputLengthLearner({ priorTokens: 100, alpha: 0.1, maxModels: 8 }));
      m.onRouted({ requestId: 'r1', endpointId: 'a', model: 'm', promptTokens: 1000, predictedHitFraction: 0.75 });
      m.onRouted({ requestId: 'r2', endpointId: 'a', model: 'm', promptTokens: 400, predictedHitFraction: 0, maxTokens: 30 });
      m.onRouted({ requestId: 'r3', endpointId: 'b', model: 'm', promptTokens: 400, predictedHitFraction: 2 });
      expect(m.pendingTokens('a')).to.be.closeTo(250 + 100 + 400 + 30, 1e-9);
      expect(m.pendingPrefillTokens('a')).to.be.closeTo(650, 1e-9);
      expect(m.pendingTokens('b')).to.equal(100, 'hit fraction is clamped to 1');
      expect(m.inflight('a')).to.equal(2);
      m.onRouted({ requestId: 'r1', endpointId: 'a', model: 'm', promptTokens: 1000, predictedHitFraction: 0 });
      expect(m.inflight('a')).to.equal(2, 'routing the same id twice counts once');
    });

    it('drops the prefill part at first token and everything at completion', () => {
      const m = new TokenLoadModel(new OutputLengthLearner({ priorTokens: 100, alpha: 0.1, maxModels: 8 }));
      m.onRouted({ requestId: 'r1', endpointId: 'a', model: 'm', promptTokens: 1000, predictedHitFraction: 0 });
      m.onFirstToken('r1');
      m.onFirstToken('r1');
      expect(m.pendingTokens('a')).to.equal(100);
      m.onCompleted('r1', 'm', 40);
      expect(m.pendingTokens('a')).to.equal(0);
      expect(m.inflight('a')).to.equal(0);
      expect(m.learner.expected('m')).to.equal(40, 'learned from usage');
    });

    it('does not learn from aborted requests, and unknown ids are harmless', () => {
      const m = new TokenLoadModel(new OutputLengthLearner({ priorTokens: 100, alpha: 0.1, maxModels: 8 }));
      m.onRouted({ requestId: 'r1', endpointId: 'a', model: 'm', promptTokens: 10, predictedHitFraction: 0 });
      m.onCompleted('r1', 'm', 3, true);
      m.onCompleted('nope', 'm');
      expect(m.learner.expected('m')).to.equal(100);
      expect(m.pendingTokens('a')).to.equal(0);
    });

    it('forgets endpoints that left the registry', () => {
      const m = new TokenLoadModel();
      m.onRouted({ requestId: 'r1', endpointId: 'a', model: 'm', promptTokens: 10, predictedHitFraction: 0 });
      m.onRouted({ requestId: 'r2', endpointId: 'b', model: 'm', promptTokens: 10, predictedHitFraction: 0 });
      m.retain(['b']);
      expect(m.pendingTokens('a')).to.equal(0);
      expect(m.inflight('b')).to.equal(1);
      m.onCompleted('r1', 'm');
      expect(m.inflight('b')).to.equal(1);
    });
  });
  describe('TokenLoadModel: split requests (prefill/decode)', () => {
    it('puts the prefill part on the prefill engine until the first token, the decode part on the decode engine', () => {
      const m = new TokenLoadModel(new OutputLengthLearner({ priorTokens: 100, alpha: 0.1, maxModels: 4 }));
      m.onRouted({ requestId: 'r', endpointId: 'd', prefillEndpointId: 'p', model: 'm', promptTokens: 1000, predictedHitFraction: 0.25 });
      expect(m.pendingPrefillTokens('p')).to.equal(750);
      expect(m.pendingPrefillTokens('d')).to.equal(0);
      expect(m.pendingTokens('d')).to.equal(100);
      expect(m.inflight('p')).to.equal(1);
      m.onFirstToken('r');
      expect(m.pendingTokens('p')).to.equal(0);
      expect(m.inflight('p')).to.equal(0);
      expect(m.pendingTokens('d')).to.equal(100);
      m.onCompleted('r', 'm', 10);
      expect(m.pendingTokens('d')).to.equal(0);
      m.onRouted({ requestId: 's', endpointId: 'd', prefillEndpointId: 'p', model: 'm', promptTokens: 400, predictedHitFraction: 0 });
      m.onCompleted('s', 'm', undefined, true);
      expect(m.pendingTokens('p') + m.pendingTokens('d') + m.inflight('p') + m.inflight('d')).to.equal(
        0,
        'no first token: completion clears both',
      );
    });
  });
});
