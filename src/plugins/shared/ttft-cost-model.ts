/**
 * Time to first token as a linear cost over what is ahead of a request on one engine,
 * with per-engine coefficients learned online.
 *
 * Why this shape: a continuous-batching engine (vLLM) produces a request's first token once
 * every prefill token queued before it and its own uncached prompt have gone through the
 * steps, and each step also carries the decode batch. So, for one engine,
 *
 *   TTFT ≈ overhead                                 (API server, tokenizing, scheduling)
 *        + prefillMsPerToken × (ahead + uncached)   (prefill work queued before it, then its own)
 *        + stepMs × steps                           (fixed cost per engine step)
 *        + decodeMsPerSeq × steps × batch           (the decode batch rides along each step)
 *        + contextMsPerKToken × uncached × context/1000   (attention over the cached prefix)
 *        + slotWaitMs × max(0, batch + queued + 1 − maxNumSeqs)  (waiting for a free sequence slot)
 *
 * with steps = ceil((ahead + uncached) / (chunkTokens − batch)), context = cached +
 * uncached/2 tokens and queued = the requests ahead of it. The last term is the one hinge:
 * an engine whose running batch is full (vLLM --max-num-seqs) admits a request only when a
 * running one finishes; on the fleet simulator leaving it out underpredicted a hot engine's
 * TTFT by up to 4× and kept piling requests onto it. Every term is a known feature times one coefficient, so the
 * coefficients are fitted by recursive least squares (Bayesian linear regression in its
 * online form): the prior mean and variance are the starting point of a new engine, every
 * observed TTFT updates its engine. Observations are weighted by 1/TTFT² so the fit
 * minimises relative error (the bar is a percentage error, and a 50 ms hit and a 3 s cold
 * prefill both matter); a random-walk drift of each coefficient (Kalman process noise, a
 * fraction of its prior per observation) lets an engine that slows down be followed. Why not
 * exponential forgetting: on a workload whose requests look alike for a while (a warm-up of
 * cold prompts) it inflates the covariance of every unexcited direction until the first
 * different request throws the fit to its bounds (measured on the fleet seed table's 50%
 * cell: the pooled fit went from 0.08 to 0.66 ms per token and to the overhead bound within
 * 200 observations, and the router herded 8 cold requests onto one engine);
 * residuals beyond a few noise widths are clipped (a stalled response cannot drag the fit)
 * and every coefficient is projected into [prior ÷ bound, prior × bound], so one noisy
 * engine cannot swing decisions far from plausible values.
 *
 * New engines: a pooled fit learns from every engine's observations. An engine with fewer
 * than `minSamples` observations of its own is predicted by the pooled fit, and its own fit
 * starts from the pooled coefficients at its first observation. Why: if untrained engines
 * kept the priors while trained ones had learned they are faster, every request would herd
 * onto the engines already trained (measured on the fleet simulator: one engine of 16 got
 * every observation and TTFT p50 rose 1.7×).
 */

/** Coefficient names, in feature order. */
export const TTFT_COEFFICIENTS = [
  'overheadMs',
  'prefillMsPerToken',
  'stepMs',
  'decodeMsPerSeq',
  'contextMsPerKToken',
  'slotWaitMs',
] as const;
export type TtftCoefficient = (typeof TTFT_COEFFICIENTS)[number];
export type TtftCoefficients = Readonly<Record<TtftCoefficient, number>>;
const D = TTFT_COEFFICIENTS.length;

/**
 * Priors: the real vLLM CPU engine of this project (tiny model, one core), as fitted in
 * docs/decisions/0123 (step 12.4 ms, prefill 0.106 ms/token, decode 1.17 ms per sequence
 * and step, context 0.112 ms per token per 1k context tokens) plus its API server's ~8.5 ms.
 */
export const DEFAULT_TTFT_PRIORS: TtftCoefficients = {
  overheadMs: 10,
  prefillMsPerToken: 0.106,
  stepMs: 12.4,
  decodeMsPerSeq: 1.17,
  contextMsPerKToken: 0.112,
  // A full batch frees a slot every mean decode time ÷ slots: ~256 tokens × 30 ms ÷ 256.
  slotWaitMs: 30,
};

export interface TtftModelOptions {
  readonly priors: TtftCoefficients;
  /** Coefficients stay within [prior / bound, prior × bound] (overhead and context may reach 0). */
  readonly bound: number;
  /** Prior standard deviation as a multiple of each prior mean. */
  readonly priorSpread: number;
  /** Expected relative noise of one observation (sd of TTFT / TTFT). */
  readonly noise: number;
  /** Forgetting factor per observation in (0,1]: 1 = never forget. */
  readonly forgetting: number;
  /**
   * Random-walk drift of each coefficient per observation, as a fraction of its prior (the
   * process noise of a Kalman filter): how an engine that slows down is followed without
   * exponential forgetting's wind-up. 0 = none.
   */
  readonly drift: number;
  /** Residuals beyond this many noise widths are clipped. */
  readonly clipSigmas: number;
  /** Prefill tokens per engine step (vLLM max_num_batched_tokens). */
  readonly chunkTokens: number;
  /** Sequences an engine runs at once (vLLM --max-num-seqs). */
  readonly maxNumSeqs: number;
  /** Observations of its own before an engine is predicted by its own fit instead of the pooled one. */
  readonly minSamples: number;
}

export const DEFAULT_TTFT_MODEL: TtftModelOptions = {
  priors: DEFAULT_TTFT_PRIORS,
  bound: 8,
  priorSpread: 1,
  noise: 0.25,
  forgetting: 1,
  drift: 0.02,
  clipSigmas: 3,
  chunkTokens: 2048,
  maxNumSeqs: 256,
  minSamples: 20,
};

/** What is ahead of a request on one engine, and the request itself there. */
export interface TtftFeatures {
  /** Uncached prefill tokens queued before this request (not yet past their first token). */
  readonly aheadTokens: number;
  /** This request's prompt tokens the engine does not hold. */
  readonly uncachedTokens: number;
  /** This request's prompt tokens the engine is predicted to hold. */
  readonly cachedTokens: number;
  /** Sequences decoding on the engine (past their first token, not finished). */
  readonly batch: number;
  /** Requests queued before this one (not yet past their first token); default 0. */
  readonly aheadRequests?: number;
}

/** The feature vector of `f` into `out` (length 6). */
export function featureVector(f: TtftFeatures, chunkTokens: number, maxNumSeqs: number, out: Float64Array): Float64Array {
  return featureValues(f.aheadTokens, f.uncachedTokens, f.cachedTokens, f.batch, f.aheadRequests ?? 0, chunkTokens, maxNumSeqs, out);
}

/** featureVector from the five numbers (no object: the per-candidate hot path). */
function featureValues(
  ahead: number,
  uncached: number,
  cached: number,
  batchIn: number,
  aheadRequests: number,
  chunkTokens: number,
  maxNumSeqs: number,
  out: Float64Array,
): Float64Array {
  const u = Math.max(0, uncached);
  const prefill = Math.max(0, ahead) + u;
  const batch = Math.max(0, batchIn);
  const perStep = Math.max(chunkTokens / 8, chunkTokens - batch);
  const steps = Math.max(1, Math.ceil(prefill / perStep));
  out[0] = 1;
  out[1] = prefill;
  out[2] = steps;
  out[3] = steps * batch;
  out[4] = (u * (Math.max(0, cached) + u / 2)) / 1000;
  out[5] = Math.max(0, batch + Math.max(0, aheadRequests) + 1 - maxNumSeqs);
  return out;
}

/** An engine's own fit as `fitOf` hands it out, for `activeCoefficientsOf`. */
export interface FitHandle {
  readonly samples: number;
}

/** One engine's fit: mean θ, covariance P, and accuracy bookkeeping. */
class EngineFit implements FitHandle {
  readonly theta = new Float64Array(D);
  readonly p = new Float64Array(D * D);
  samples = 0;
  clipped = 0;

  constructor(start: ArrayLike<number>, p0: ArrayLike<number>) {
    for (let i = 0; i < D; i++) {
      this.theta[i] = start[i]!;
      this.p[i * D + i] = p0[i]!;
    }
  }
}

export interface EngineModelState {
  /** Observations of this engine's own. */
  readonly samples: number;
  /** True while the engine is predicted by the pooled fit (fewer than minSamples of its own). */
  readonly pooled: boolean;
  readonly clipped: number;
  readonly coefficients: TtftCoefficients;
  /** Uncached tokens per ms the engine prefills (1 / prefillMsPerToken). */
  readonly prefillTokensPerMs: number;
}

/** Per-engine TTFT coefficients, learned online. Keys are endpoint ids. */
export class TtftCostModel {
  private readonly fits = new Map<string, EngineFit>();
  /** Fits created so far: a caller whose `fitOf` found none need not look again until this moves. */
  fitsCreated = 0;
  /** Learns from every engine: predicts engines with too few observations of their own. */
  private readonly pooled: EngineFit;
  private readonly prior: Float64Array;
  private readonly lo: Float64Array;
  private readonly hi: Float64Array;
  private readonly p0: Float64Array;
  /** Drift variance added to each coefficient per observation. */
  private readonly q: Float64Array;
  private readonly x = new Float64Array(D);
  private readonly px = new Float64Array(D);

  constructor(readonly opts: TtftModelOptions = DEFAULT_TTFT_MODEL) {
    this.prior = Float64Array.from(TTFT_COEFFICIENTS, (k) => opts.priors[k]);
    this.lo = Float64Array.from(TTFT_COEFFICIENTS, (k, i) => (i === 0 || i === 4 ? 0 : opts.priors[k] / opts.bound));
    this.hi = Float64Array.from(TTFT_COEFFICIENTS, (k) => opts.priors[k] * opts.bound);
    // Prior variance of each coefficient, in its own units.
    this.p0 = Float64Array.from(this.prior, (m) => (m * opts.priorSpread) ** 2);
    this.q = Float64Array.from(this.prior, (m) => (m * opts.drift) ** 2);
    this.pooled = new EngineFit(this.prior, this.p0);
  }

  /** Predicted TTFT in ms of a request with features `f` on engine `id`. */
  predict(id: string, f: TtftFeatures): number {
    return this.predictValues(id, f.aheadTokens, f.uncachedTokens, f.cachedTokens, f.batch, f.aheadRequests ?? 0);
  }

  /** `predict` from the feature numbers (TtftFeatures' fields, in order). */
  predictValues(id: string, ahead: number, uncached: number, cached: number, batch: number, aheadRequests: number): number {
    return this.predictWith(this.active(id).theta, ahead, uncached, cached, batch, aheadRequests);
  }

  /**
   * Engine `id`'s own fit as a handle, undefined while it has none (before its first observation):
   * valid until `retain` drops the engine. For a caller that keeps it per endpoint index and
   * reads `activeCoefficientsOf` without the lookup by id.
   */
  fitOf(id: string): FitHandle | undefined {
    return this.fits.get(id);
  }

  /**
   * The coefficients the engine whose `fitOf` handle this is (undefined: no fit of its own
   * yet) is predicted with now (TTFT_COEFFICIENTS order), for `predictWith` and
   * `prefillTokensPerMsWith`: a decision resolves them once per candidate instead of once per
   * figure. Read-only; valid until the next `observe`.
   */
  activeCoefficientsOf(fit: FitHandle | undefined): ArrayLike<number> {
    return this.activeFit(fit as EngineFit | undefined).theta;
  }

  /** `predictValues` with coefficients from `activeCoefficientsOf`. */
  predictWith(theta: ArrayLike<number>, ahead: number, uncached: number, cached: number, batch: number, aheadRequests: number): number {
    const x = featureValues(ahead, uncached, cached, batch, aheadRequests, this.opts.chunkTokens, this.opts.maxNumSeqs, this.x);
    let y = 0;
    for (let i = 0; i < D; i++) y += theta[i]! * x[i]!;
    return y;
  }

  /** Prefill throughput of engine `id` in uncached tokens per ms. */
  prefillTokensPerMs(id: string): number {
    return prefillTokensPerMsWith(this.active(id).theta);
  }

  /**
   * Uncached tokens per ms engine `id` prefills while `batch` sequences decode: each step of
   * the engine carries the step cost and the batch, and up to chunkTokens − batch prefill tokens;
   * each token also costs the context term at `contextK` thousand tokens of attention context
   * (the caller's: ttft-model uses the mean over recently routed requests). Why the context term: a request's own prefill is
   * predicted with it, and a queue drained without it ran ahead of the engine wherever the fit
   * put part of the prefill cost there. On the fleet simulator, before the first completions
   * had taught the fit the GPU-like engines' costs (the priors are the CPU engine's, which
   * carry 80 ms of context cost on a 1,200-token prompt), the lanes drained at 8.9 tokens/ms
   * against the 5.7 the predictions implied and the engines' 6.5: a burst of new sessions
   * (the Mooncake-format trace at 64 engines) saw 0-700 tokens ahead on engines holding
   * 1,200-3,300, piled onto them, and had TTFT p99 286 ms against the oracle's 177 (185 with the
   * context term); the 16-engine agentic cells stayed within 0.8× cache-aware's p99 in 10 of 10
   * seeds (8 without) and the one with a 2×-slow engine improved on it in 10 of 10 (7).
   */
  drainTokensPerMs(id: string, batch: number, contextK = 0): number {
    const t = this.active(id).theta;
    const b = Math.max(0, batch);
    const perStep = Math.max(this.opts.chunkTokens / 8, this.opts.chunkTokens - b);
    const msPerToken = t[1]! + t[4]! * Math.max(0, contextK) + (t[2]! + t[3]! * b) / perStep;
    return msPerToken > 0 ? 1 / msPerToken : 0;
  }

  /**
   * Learns from one observation: the request with features `f` (as they were when it was
   * routed) had its first token after `observedMs`. Non-finite or non-positive values are ignored.
   */
  observe(id: string, f: TtftFeatures, observedMs: number): void {
    if (!Number.isFinite(observedMs) || observedMs <= 0) return;
    const x = featureVector(f, this.opts.chunkTokens, this.opts.maxNumSeqs, this.x);
    const fit = this.fit(id);
    if (fit.samples === 0) fit.theta.set((this.fleetMedian() ?? this.pooled).theta);
    this.update(this.pooled, x, observedMs);
    this.update(fit, x, observedMs);
    // A newly trained engine changes the fleet median at once: until then the untrained
    // engines would be predicted by another fit than it, and traffic would herd to one side.
    if (fit.samples === this.opts.minSamples) this.medianAtObservation = -1;
  }

  /** One recursive-least-squares step of `fit` towards `observedMs` at features `x`. */
  private update(fit: EngineFit, x: Float64Array, observedMs: number): void {
    const { theta, p } = fit;
    const px = this.px;
    let pred = 0;
    let xpx = 0;
    for (let i = 0; i < D; i++) {
      pred += theta[i]! * x[i]!;
      let s = 0;
      for (let j = 0; j < D; j++) s += p[i * D + j]! * x[j]!;
      px[i] = s;
      xpx += x[i]! * s;
    }
    // Observation variance (relative noise × TTFT)²: each observation weighs 1/TTFT².
    const r = observedMs * this.opts.noise;
    const denom = r * r + xpx;
    let resid = observedMs - pred;
    const limit = this.opts.clipSigmas * Math.sqrt(denom);
    if (Math.abs(resid) > limit) {
      resid = Math.sign(resid) * limit;
      fit.clipped++;
    }
    const lambda = this.opts.forgetting;
    for (let i = 0; i < D; i++) theta[i] = theta[i]! + (px[i]! / denom) * resid;
    for (let i = 0; i < D; i++) {
      for (let j = 0; j < D; j++) p[i * D + j] = (p[i * D + j]! - (px[i]! * px[j]!) / denom) / lambda;
    }
    for (let i = 0; i < D; i++) {
      // Projection onto the bounds, and no covariance above the prior's (forgetting without wind-up).
      if (theta[i]! < this.lo[i]!) theta[i] = this.lo[i]!;
      else if (theta[i]! > this.hi[i]!) theta[i] = this.hi[i]!;
      p[i * D + i] = p[i * D + i]! + this.q[i]!;
      const pii = p[i * D + i]!;
      if (pii > this.p0[i]!) {
        const s = Math.sqrt(this.p0[i]! / pii);
        for (let j = 0; j < D; j++) {
          p[i * D + j] = p[i * D + j]! * s;
          p[j * D + i] = p[j * D + i]! * s;
        }
      }
    }
    fit.samples++;
  }

  /** The engine's own fit (samples, clipped) and the coefficients it is predicted with. */
  state(id: string): EngineModelState {
    const fit = this.fit(id);
    const used = this.active(id);
    return {
      samples: fit.samples,
      clipped: fit.clipped,
      pooled: used !== fit,
      coefficients: coefficientsOf(used.theta),
      prefillTokensPerMs: prefillTokensPerMsWith(used.theta),
    };
  }

  /** The pooled fit's state (every engine's observations). */
  pooledState(): EngineModelState {
    const p = this.pooled;
    return {
      samples: p.samples,
      clipped: p.clipped,
      pooled: true,
      coefficients: coefficientsOf(p.theta),
      prefillTokensPerMs: prefillTokensPerMsWith(p.theta),
    };
  }

  /** Engine ids with a fit. */
  engines(): string[] {
    return [...this.fits.keys()];
  }

  /** Forgets engines not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const id of [...this.fits.keys()]) if (!keep.has(id)) this.fits.delete(id);
  }

  /**
   * The fit that predicts engine `id`: its own once it has minSamples observations; else the
   * coefficient-wise median of the trained engines' own fits (robust to one engine in a regime
   * the others are not in); else, before any engine is trained, the pooled fit.
   */
  private active(id: string): EngineFit {
    return this.activeFit(this.fits.get(id));
  }

  /** `active` of the engine whose own fit is `f`. */
  private activeFit(f: EngineFit | undefined): EngineFit {
    if (f !== undefined && f.samples >= this.opts.minSamples) return f;
    return this.fleetMedian() ?? this.pooled;
  }

  private medianFit: EngineFit | undefined;
  private medianAtObservation = -1;

  /** The median of the trained engines' coefficients, recomputed at most every 16 observations. */
  private fleetMedian(): EngineFit | undefined {
    const seen = this.pooled.samples;
    if (this.medianAtObservation >= 0 && seen - this.medianAtObservation < 16) return this.medianFit;
    this.medianAtObservation = seen;
    const trained = [...this.fits.values()].filter((x) => x.samples >= this.opts.minSamples);
    if (trained.length === 0) {
      this.medianFit = undefined;
      return undefined;
    }
    const m = new Float64Array(D);
    for (let i = 0; i < D; i++) {
      const v = trained.map((x) => x.theta[i]!).sort((a, b) => a - b);
      const h = v.length >> 1;
      m[i] = v.length % 2 === 1 ? v[h]! : (v[h - 1]! + v[h]!) / 2;
    }
    const fit = new EngineFit(m, this.p0);
    fit.samples = seen;
    this.medianFit = fit;
    return fit;
  }

  private fit(id: string): EngineFit {
    let f = this.fits.get(id);
    if (f === undefined) {
      f = new EngineFit(this.prior, this.p0);
      this.fits.set(id, f);
      this.fitsCreated++;
    }
    return f;
  }
}

/** Prefill throughput in uncached tokens per ms of coefficients `theta` (1 / prefillMsPerToken). */
export function prefillTokensPerMsWith(theta: ArrayLike<number>): number {
  return 1 / theta[1]!;
}

function coefficientsOf(theta: Float64Array): TtftCoefficients {
  const out = {} as Record<TtftCoefficient, number>;
  TTFT_COEFFICIENTS.forEach((k, i) => {
    out[k] = Number(theta[i]!.toPrecision(4));
  });
  return out;
}
