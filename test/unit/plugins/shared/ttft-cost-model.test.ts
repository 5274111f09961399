import { expect } from 'chai';
import {
  DEFAULT_TTFT_MODEL,
  DEFAULT_TTFT_PRIORS,
  featureVector,
  prefillTokensPerMsWith,
  TtftCostModel,
  type TtftCoefficients,
  type TtftFeatures,
} from '../../../../src/plugins/shared/ttft-cost-model.js';
import { seededRng, type Rng } from '../../../../src/util/rng.js';

/** The true TTFT of an engine with coefficients `c` (the same cost shape, no noise). */
function truth(c: TtftCoefficients, f: TtftFeatures): number {
  const x = featureVector(f, DEFAULT_TTFT_MODEL.chunkTokens, DEFAULT_TTFT_MODEL.maxNumSeqs, new Float64Array(6));
  return (
    c.overheadMs * x[0]! +
    c.prefillMsPerToken * x[1]! +
    c.stepMs * x[2]! +
    c.decodeMsPerSeq * x[3]! +
    c.contextMsPerKToken * x[4]! +
    c.slotWaitMs * x[5]!
  );
}

function randomFeatures(rng: Rng): TtftFeatures {
  const prompt = 200 + rng.int(3000);
  const cachedShare = rng.next() < 0.4 ? 0 : rng.next();
  const cachedTokens = Math.floor(prompt * cachedShare);
  const batch = rng.next() < 0.8 ? rng.int(12) : 240 + rng.int(30);
  return {
    aheadTokens: rng.next() < 0.5 ? 0 : rng.int(6000),
    uncachedTokens: prompt - cachedTokens,
    cachedTokens,
    batch,
    aheadRequests: rng.int(8),
  };
}

function mape(model: TtftCostModel, id: string, c: TtftCoefficients, rng: Rng, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) {
    const f = randomFeatures(rng);
    const y = truth(c, f);
    s += Math.abs(model.predict(id, f) - y) / y;
  }
  return s / n;
}

const SLOW: TtftCoefficients = {
  overheadMs: 20,
  prefillMsPerToken: 0.212,
  stepMs: 24.8,
  decodeMsPerSeq: 2.34,
  contextMsPerKToken: 0.224,
  slotWaitMs: 60,
};

describe('ttft-cost-model', () => {
  it('drains prefill at the step, batch and context cost per token', () => {
    const m = new TtftCostModel();
    const p = DEFAULT_TTFT_PRIORS;
    const perToken = (batch: number, contextK: number) =>
      p.prefillMsPerToken +
      p.contextMsPerKToken * contextK +
      (p.stepMs + p.decodeMsPerSeq * batch) / (DEFAULT_TTFT_MODEL.chunkTokens - batch);
    expect(m.drainTokensPerMs('a', 0)).to.be.closeTo(1 / perToken(0, 0), 1e-9);
    expect(m.drainTokensPerMs('a', 8, 2)).to.be.closeTo(1 / perToken(8, 2), 1e-9);
    expect(m.drainTokensPerMs('a', 0, 2)).to.be.below(m.drainTokensPerMs('a', 0, 0) / 1.9);
  });

  it('starts every engine at the priors', () => {
    const m = new TtftCostModel();
    const f: TtftFeatures = { aheadTokens: 0, uncachedTokens: 3000, cachedTokens: 0, batch: 0 };
    // 10 + 0.106 × 3000 + 12.4 × 2 steps + 0 + 0.112 × 3000 × 1.5 = 10 + 318 + 24.8 + 504
    expect(m.predict('a', f)).to.be.closeTo(856.8, 1e-6);
    expect(m.state('a').coefficients).to.deep.equal(DEFAULT_TTFT_PRIORS);
  });

  it('learns an engine twice as slow as the priors from noisy observations (relative error under 5 %)', () => {
    const m = new TtftCostModel();
    const rng = seededRng(7);
    const before = mape(m, 'slow', SLOW, seededRng(99), 200);
    for (let i = 0; i < 400; i++) {
      const f = randomFeatures(rng);
      m.observe('slow', f, truth(SLOW, f) * (1 + 0.1 * (rng.next() - 0.5)));
    }
    const after = mape(m, 'slow', SLOW, seededRng(99), 200);
    expect(before).to.be.above(0.4);
    expect(after).to.be.below(0.05);
    expect(m.state('slow').coefficients.prefillMsPerToken).to.be.closeTo(0.212, 0.05);
    expect(m.state('slow').samples).to.equal(400);
  });

  it('keeps a noisy engine within the bounds and clips its wild residuals', () => {
    const m = new TtftCostModel();
    const rng = seededRng(3);
    for (let i = 0; i < 300; i++) {
      const f = randomFeatures(rng);
      // Every fifth response stalls for a minute; the rest are honest.
      m.observe('noisy', f, i % 5 === 0 ? 60_000 : truth(DEFAULT_TTFT_PRIORS, f));
    }
    const s = m.state('noisy');
    for (const [k, v] of Object.entries(s.coefficients)) {
      const prior = DEFAULT_TTFT_PRIORS[k as keyof TtftCoefficients];
      expect(v, k).to.be.at.most(prior * DEFAULT_TTFT_MODEL.bound + 1e-9);
    }
    expect(s.clipped).to.be.above(0);
    // Stalls are clipped: a typical request is still predicted within 2x, not at a minute.
    const f: TtftFeatures = { aheadTokens: 0, uncachedTokens: 1000, cachedTokens: 0, batch: 2 };
    expect(m.predict('noisy', f)).to.be.below(2 * truth(DEFAULT_TTFT_PRIORS, f));
  });

  it('stays near the truth when a long run of alike requests ends (exponential forgetting does not)', () => {
    // The fleet seed table's 50 % cell: 300 cold 1,536-token prompts during warm-up, then
    // half-cached ones; a GPU-like engine (step 8 ms, 0.15 ms per prefill token, no overhead).
    const gpu: TtftCoefficients = {
      overheadMs: 0,
      prefillMsPerToken: 0.15,
      stepMs: 8,
      decodeMsPerSeq: 0.4,
      contextMsPerKToken: 0,
      slotWaitMs: 30,
    };
    const run = (opts: Partial<typeof DEFAULT_TTFT_MODEL>): TtftCostModel => {
      const m = new TtftCostModel({ ...DEFAULT_TTFT_MODEL, maxNumSeqs: 64, ...opts });
      const rng = seededRng(11);
      for (let i = 0; i < 300; i++) {
        const f: TtftFeatures = { aheadTokens: 0, uncachedTokens: 1536, cachedTokens: 0, batch: rng.int(3) };
        m.observe(`e${i % 16}`, f, truth(gpu, f));
      }
      for (let i = 0; i < 100; i++) {
        const f: TtftFeatures = { aheadTokens: rng.int(2) * rng.int(800), uncachedTokens: 768, cachedTokens: 768, batch: rng.int(3) };
        m.observe(`e${i % 16}`, f, truth(gpu, f));
      }
      return m;
    };
    const cold: TtftFeatures = { aheadTokens: 0, uncachedTokens: 1536, cachedTokens: 0, batch: 0 };
    const hit: TtftFeatures = { aheadTokens: 0, uncachedTokens: 768, cachedTokens: 768, batch: 0 };
    const drift = run({});
    const forgetting = run({ forgetting: 0.995, drift: 0 });
    for (const f of [cold, hit]) {
      for (const id of ['e0', 'e5', 'new']) expect(Math.abs(drift.predict(id, f) / truth(gpu, f) - 1), id).to.be.below(0.15);
    }
    expect(drift.pooledState().coefficients.prefillMsPerToken).to.be.closeTo(0.15, 0.03);
    expect(drift.pooledState().coefficients.overheadMs).to.be.below(DEFAULT_TTFT_PRIORS.overheadMs);
    // The failure this guards against: the pooled fit (what new engines are predicted by, and
    // start from) thrown towards its bounds, prefill over 4x the truth.
    expect(forgetting.pooledState().coefficients.overheadMs).to.be.above(3 * DEFAULT_TTFT_PRIORS.overheadMs);
    expect(forgetting.pooledState().coefficients.prefillMsPerToken).to.be.above(0.6);
  });

  it('follows an engine that slows down (the drift keeps the fit open)', () => {
    const follow = (drift: number): number => {
      const m = new TtftCostModel({ ...DEFAULT_TTFT_MODEL, drift });
      const rng = seededRng(21);
      for (let i = 0; i < 600; i++) {
        const f = randomFeatures(rng);
        m.observe('e', f, truth(DEFAULT_TTFT_PRIORS, f));
      }
      for (let i = 0; i < 150; i++) {
        const f = randomFeatures(rng);
        m.observe('e', f, truth(SLOW, f));
      }
      return mape(m, 'e', SLOW, seededRng(99), 200);
    };
    const withDrift = follow(DEFAULT_TTFT_MODEL.drift);
    expect(withDrift).to.be.below(0.1);
    expect(follow(0)).to.be.above(withDrift);
  });

  it('predicts the untrained engines by the fleet median as soon as an engine is trained (no herding onto it)', () => {
    const m = new TtftCostModel();
    const rng = seededRng(8);
    // Another engine's few observations first, so the median is looked up (and cached) before 'a' is trained.
    for (let i = 0; i < 5; i++) {
      const f = randomFeatures(rng);
      m.observe('b', f, truth(SLOW, f));
    }
    for (let i = 0; i < DEFAULT_TTFT_MODEL.minSamples; i++) {
      const f = randomFeatures(rng);
      m.observe('a', f, truth(SLOW, f));
      m.predict('c', f);
    }
    expect(m.state('a').pooled).to.equal(false);
    expect(m.state('c').coefficients).to.deep.equal(m.state('a').coefficients);
  });

  it('predicts an engine with too few observations of its own by the pooled fit of all engines', () => {
    const m = new TtftCostModel();
    const rng = seededRng(5);
    for (let i = 0; i < 200; i++) {
      const f = randomFeatures(rng);
      m.observe('old', f, truth(SLOW, f));
    }
    const newcomer = m.state('new');
    expect(newcomer.pooled).to.equal(true);
    expect(newcomer.coefficients.prefillMsPerToken).to.be.closeTo(m.state('old').coefficients.prefillMsPerToken, 1e-9);
    expect(m.state('old').pooled).to.equal(false);
    // Its own fit takes over after minSamples observations, starting from the pooled coefficients.
    for (let i = 0; i < DEFAULT_TTFT_MODEL.minSamples; i++) {
      const f = randomFeatures(rng);
      m.observe('new', f, truth(DEFAULT_TTFT_PRIORS, f));
    }
    expect(m.state('new').pooled).to.equal(false);
    expect(m.state('new').coefficients.prefillMsPerToken).to.be.below(m.state('old').coefficients.prefillMsPerToken);
  });

  it('predicts from coefficients resolved once exactly as by engine id (own, median and pooled fits)', () => {
    const m = new TtftCostModel();
    const rng = seededRng(11);
    const agree = (id: string): void => {
      const theta = m.activeCoefficientsOf(m.fitOf(id));
      for (let i = 0; i < 20; i++) {
        const f = randomFeatures(rng);
        const a = f.aheadRequests ?? 0;
        expect(m.predictWith(theta, f.aheadTokens, f.uncachedTokens, f.cachedTokens, f.batch, a)).to.equal(m.predict(id, f));
      }
      expect(prefillTokensPerMsWith(theta)).to.equal(m.prefillTokensPerMs(id));
    };
    for (let i = 0; i < 5; i++) {
      const f = randomFeatures(rng);
      m.observe('few', f, truth(DEFAULT_TTFT_PRIORS, f));
    }
    agree('few'); // the pooled fit: no engine trained yet
    for (let i = 0; i < 200; i++) {
      const f = randomFeatures(rng);
      m.observe('trained', f, truth(SLOW, f));
    }
    agree('trained'); // its own fit
    agree('few'); // the fleet median
    agree('unseen');
  });

  it('ignores observations that are not positive finite times, and forgets departed engines', () => {
    const m = new TtftCostModel();
    const f: TtftFeatures = { aheadTokens: 0, uncachedTokens: 100, cachedTokens: 0, batch: 0 };
    for (const y of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) m.observe('a', f, y);
    expect(m.state('a').samples).to.equal(0);
    m.observe('b', f, 50);
    m.retain(new Set(['a']));
    expect(m.engines()).to.deep.equal(['a']);
  });
});
