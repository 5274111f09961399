/**
 * The load picture of one endpoint as the scheduler sees it: router-side accounting
 * (always fresh, but blind to work the router did not send) merged with engine-reported
 * metrics (complete, but as old as the last scrape). See src/endpoints/ for who fills it.
 */
export interface LoadSnapshot {
  /** Requests the router sent that have not finished (router-side, exact). */
  readonly inflightRequests: number;
  /** Estimated prompt tokens of those requests (router-side). */
  readonly inflightPromptTokens: number;
  /**
   * Of those, requests that have not answered their first byte yet: queued for or in
   * prefill (router-side, exact when the edge reports first bytes; else = inflightRequests).
   */
  readonly prefillingRequests?: number;
  /**
   * Estimated pending work in tokens: uncached prefill tokens not yet done plus expected
   * decode tokens of in-flight requests. Equals inflightPromptTokens until a load model
   * refines it.
   */
  readonly pendingTokens: number;
  /** Engine-reported queue (vllm:num_requests_waiting), if known. */
  readonly waiting?: number;
  /** Engine-reported running requests (vllm:num_requests_running), if known. */
  readonly running?: number;
  /** Engine-reported KV-cache usage in [0,1], if known. */
  readonly kvUsage?: number;
  /** Age of the engine-reported fields in ms; Infinity if never scraped. */
  readonly metricsAgeMs: number;
  /** False when the endpoint failed health/scrapes and should not receive traffic. */
  readonly healthy: boolean;
}

/** A LoadSnapshot being filled in place (registry.loadInto, LoadSource.enrichInPlace). */
export type MutableLoadSnapshot = { -readonly [K in keyof LoadSnapshot]: LoadSnapshot[K] };

/**
 * A snapshot object with every field present (optional ones undefined), so all objects the
 * hot path fills share one hidden class whatever the load sources set.
 */
export function newLoadScratch(): MutableLoadSnapshot {
  return {
    inflightRequests: 0,
    inflightPromptTokens: 0,
    prefillingRequests: 0,
    pendingTokens: 0,
    waiting: undefined,
    running: undefined,
    kvUsage: undefined,
    metricsAgeMs: Number.POSITIVE_INFINITY,
    healthy: true,
  };
}

export const IDLE_LOAD: LoadSnapshot = {
  inflightRequests: 0,
  inflightPromptTokens: 0,
  pendingTokens: 0,
  metricsAgeMs: Number.POSITIVE_INFINITY,
  healthy: true,
};

/**
 * A single scalar "how busy is it" used by queue scorers and the imbalance escape.
 * Uses the router's own in-flight count, raised to the engine's reported running+waiting
 * when that is fresher information (work the router did not see, e.g. other routers).
 */
export function effectiveQueue(load: LoadSnapshot, maxMetricsAgeMs: number): number {
  const own = load.inflightRequests;
  if (load.metricsAgeMs <= maxMetricsAgeMs && load.waiting !== undefined) {
    const engine = load.waiting + (load.running ?? 0);
    return Math.max(own, engine);
  }
  return own;
}

/**
 * Work queued ahead of a new request's prefill: the router's requests on the endpoint that
 * have not answered their first byte, raised to the engine's reported waiting queue when
 * fresh. The signal for time to first token (see inflight.ts for why it differs from the
 * in-flight count). Without first-byte reports it is the in-flight count.
 */
export function prefillQueue(load: LoadSnapshot, maxMetricsAgeMs: number): number {
  const own = load.prefillingRequests ?? load.inflightRequests;
  if (load.metricsAgeMs <= maxMetricsAgeMs && load.waiting !== undefined) return Math.max(own, load.waiting);
  return own;
}

// --- load units: one meaning of "load" for every load-aware plugin ---

/**
 * What "load" means when plugins compare endpoints, so every comparison uses one unit for
 * every candidate (one engine's request count against another's token count means nothing):
 *  - requests: the router's in-flight count, raised to the engine-reported running +
 *    waiting when fresh enough (effectiveQueue);
 *  - tokens: estimated pending tokens (uncached prefill + expected decode, see
 *    src/datalayer/token-load-model.ts) divided by `tokensPerRequest`, so thresholds written
 *    in requests (imbalance 32, hotspot high water 6, session overload 8) keep their meaning
 *    in either unit: "8 requests" reads as "8 × tokensPerRequest pending tokens".
 */
export const LOAD_UNITS = ['requests', 'tokens'] as const;
export type LoadUnit = (typeof LOAD_UNITS)[number];

export interface LoadMeasure {
  readonly unit: LoadUnit;
  /** Pending tokens that count as one request in the tokens unit (> 0). */
  readonly tokensPerRequest: number;
  /** Engine-reported queue figures older than this are ignored (requests unit). */
  readonly maxMetricsAgeMs: number;
}

/** The load of one endpoint in the measure's unit (request-equivalents). */
export function loadIn(m: LoadMeasure, load: LoadSnapshot): number {
  return m.unit === 'tokens' ? load.pendingTokens / m.tokensPerRequest : effectiveQueue(load, m.maxMetricsAgeMs);
}

/** What one more request adds to an engine's load, in the same unit. */
export function requestWeight(m: LoadMeasure, promptTokens: number, expectedOutputTokens: number): number {
  return m.unit === 'tokens' ? Math.max(1, promptTokens + expectedOutputTokens) / m.tokensPerRequest : 1;
}
