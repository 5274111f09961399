/**
 * Load in tokens rather than requests.
 *
 * Why: request counts hide the two things that make an LLM engine busy. A request that
 * still has to prefill 8k uncached tokens costs far more than one whose prompt is a cache
 * hit, and a request that will decode 2k tokens occupies its slot far longer than one that
 * will decode 20. So each engine's pending work is estimated as
 *
 *   Σ over its in-flight requests of
 *       (not past first token ? promptTokens × (1 − predictedHitFraction) : 0)
 *     + expected decode tokens
 *
 * where the expected decode length is learned per model from finished responses (the
 * edge reports `completionTokens` from `usage`) with an EWMA, capped by the request's own
 * `max_tokens`. Until a model has samples, a configured prior is used.
 *
 * Sums are kept incrementally per endpoint so reading an endpoint's load is O(1).
 */

export interface OutputLengthOptions {
  /** Expected output tokens before anything is learned (default 256). */
  readonly priorTokens: number;
  /** EWMA weight of a new observation in (0,1] (default 0.1). */
  readonly alpha: number;
  /** At most this many models are tracked; the least recently seen is dropped (default 256). */
  readonly maxModels: number;
}

export const DEFAULT_OUTPUT_LENGTH: OutputLengthOptions = { priorTokens: 256, alpha: 0.1, maxModels: 256 };

export interface OutputLengthStat {
  readonly model: string;
  readonly expectedTokens: number;
  readonly samples: number;
}

/** Per-model EWMA of observed completion lengths. */
export class OutputLengthLearner {
  private readonly models = new Map<string, { mean: number; samples: number }>();

  constructor(private readonly opts: OutputLengthOptions = DEFAULT_OUTPUT_LENGTH) {}

  observe(model: string, completionTokens: number): void {
    if (!Number.isFinite(completionTokens) || completionTokens < 0) return;
    const cur = this.models.get(model);
    if (cur === undefined) {
      if (this.models.size >= this.opts.maxModels) {
        const oldest = this.models.keys().next();
        if (!oldest.done) this.models.delete(oldest.value);
      }
      this.models.set(model, { mean: completionTokens, samples: 1 });
      return;
    }
    // Warm-up: plain average for the first 1/alpha samples, so the prior-free start is not
    // dominated by the very first response; EWMA afterwards.
    const a = Math.max(this.opts.alpha, 1 / (cur.samples + 1));
    cur.mean += a * (completionTokens - cur.mean);
    cur.samples++;
    this.models.delete(model); // move to the back (recently seen)
    this.models.set(model, cur);
  }

  /** Expected completion tokens for a new request of `model`, capped by its max_tokens. */
  expected(model: string, maxTokens?: number): number {
    const m = this.models.get(model)?.mean ?? this.opts.priorTokens;
    return maxTokens !== undefined && maxTokens > 0 ? Math.min(m, maxTokens) : m;
  }

  stats(): OutputLengthStat[] {
    return [...this.models].map(([model, v]) => ({ model, expectedTokens: v.mean, samples: v.samples }));
  }
}

interface Tracked {
  readonly endpointId: string;
  /** Where the prefill part runs: a split request's prefill engine, else endpointId. */
  readonly prefillEndpointId: string;
  readonly prefillTokens: number;
  readonly decodeTokens: number;
  prefillDone: boolean;
}

interface Sums {
  prefill: number;
  decode: number;
  count: number;
}

export interface RoutedWork {
  readonly requestId: string;
  readonly endpointId: string;
  readonly model: string;
  readonly promptTokens: number;
  /** Share of the prompt the router expects the engine to have cached, in [0,1]. */
  readonly predictedHitFraction: number;
  readonly maxTokens?: number;
  /**
   * A split request's prefill engine (prefill/decode disaggregation): the prefill part is
   * its work (with `predictedHitFraction` its hit), the decode part `endpointId`'s.
   */
  readonly prefillEndpointId?: string;
}

/** Router-side pending-token accounting per endpoint. */
export class TokenLoadModel {
  private readonly byRequest = new Map<string, Tracked>();
  private readonly byEndpoint = new Map<string, Sums>();
  /** Endpoints whose pending tokens may have changed since `consumeChanges` (see there). */
  private changed = new Set<string>();
  /** True when any endpoint may have changed (start, retain). */
  private anyChanged = true;

  constructor(readonly learner: OutputLengthLearner = new OutputLengthLearner()) {}

  /** A request was routed; its expected work is added to the endpoint. Idempotent per id. */
  onRouted(w: RoutedWork): void {
    if (this.byRequest.has(w.requestId)) return;
    const hit = Math.min(1, Math.max(0, w.predictedHitFraction));
    const t: Tracked = {
      endpointId: w.endpointId,
      prefillEndpointId: w.prefillEndpointId ?? w.endpointId,
      prefillTokens: Math.max(0, w.promptTokens) * (1 - hit),
      decodeTokens: this.learner.expected(w.model, w.maxTokens),
      prefillDone: false,
    };
    this.byRequest.set(w.requestId, t);
    const s = this.sums(w.endpointId);
    s.decode += t.decodeTokens;
    s.count++;
    const p = this.sums(t.prefillEndpointId);
    p.prefill += t.prefillTokens;
    if (t.prefillEndpointId !== t.endpointId) p.count++;
  }

  /** The first output token was seen: the prefill part is done. */
  onFirstToken(requestId: string): void {
    const t = this.byRequest.get(requestId);
    if (t === undefined || t.prefillDone) return;
    t.prefillDone = true;
    this.endPrefill(t);
  }

  /** Takes the prefill part off its engine (a split request's prefill engine is then done with it). */
  private endPrefill(t: Tracked): void {
    const p = this.sums(t.prefillEndpointId);
    p.prefill -= t.prefillTokens;
    if (t.prefillEndpointId === t.endpointId) return;
    p.count--;
    if (p.count <= 0) this.byEndpoint.delete(t.prefillEndpointId);
  }

  /**
   * The request finished: its work is removed, and when the response reported usage the
   * model's output length is learned (aborted requests are not learned from: truncated).
   */
  onCompleted(requestId: string, model: string, completionTokens?: number, aborted = false): void {
    const t = this.byRequest.get(requestId);
    if (t !== undefined) {
      this.byRequest.delete(requestId);
      if (!t.prefillDone) this.endPrefill(t);
      const s = this.sums(t.endpointId);
      s.decode -= t.decodeTokens;
      s.count--;
      if (s.count <= 0) this.byEndpoint.delete(t.endpointId); // also clears float drift
    }
    if (!aborted && completionTokens !== undefined) this.learner.observe(model, completionTokens);
  }

  /**
   * The endpoints whose `pendingTokens` may differ from when this was last called, or
   * undefined when any may (first call, after `retain`); clears the record. For one reader
   * that keeps every endpoint's value and refreshes only these (the token-load source: a
   * decision reads every endpoint, a request changes one or two).
   */
  consumeChanges(): readonly string[] | undefined {
    if (this.anyChanged) {
      this.anyChanged = false;
      this.changed.clear();
      return undefined;
    }
    if (this.changed.size === 0) return NO_CHANGES;
    const ids = [...this.changed];
    this.changed.clear();
    return ids;
  }

  /** Estimated pending tokens (uncached prefill + expected decode) on the endpoint. */
  pendingTokens(endpointId: string): number {
    const s = this.byEndpoint.get(endpointId);
    return s === undefined ? 0 : Math.max(0, s.prefill) + Math.max(0, s.decode);
  }

  /** Pending uncached prefill tokens only (what delays a new request's first token most). */
  pendingPrefillTokens(endpointId: string): number {
    return Math.max(0, this.byEndpoint.get(endpointId)?.prefill ?? 0);
  }

  inflight(endpointId: string): number {
    return this.byEndpoint.get(endpointId)?.count ?? 0;
  }

  /** Drops all accounting for endpoints no longer in the registry. */
  retain(endpointIds: Iterable<string>): void {
    const keep = new Set(endpointIds);
    this.anyChanged = true;
    for (const [id, t] of this.byRequest) if (!keep.has(t.endpointId) || !keep.has(t.prefillEndpointId)) this.byRequest.delete(id);
    for (const id of [...this.byEndpoint.keys()]) if (!keep.has(id)) this.byEndpoint.delete(id);
  }

  /** The sums of `id`, recorded as changed (every caller changes them). */
  private sums(id: string): Sums {
    if (!this.anyChanged) this.changed.add(id);
    let s = this.byEndpoint.get(id);
    if (s === undefined) {
      s = { prefill: 0, decode: 0, count: 0 };
      this.byEndpoint.set(id, s);
    }
    return s;
  }
}

const NO_CHANGES: readonly string[] = [];
