/**
 * Router-side accounting: requests and estimated prompt tokens the router has sent to each
 * endpoint and not yet seen finish.
 *
 * Why router-side: it is exact and fresh at the moment of the next decision (engine scrapes
 * are tens of ms old at best), which is what keeps a burst of identical requests from all
 * landing on one engine. Each routed request holds one lease; releasing it is idempotent so
 * a request that ends through two paths (stream end and client abort) is counted once.
 */

/** One request's claim on an endpoint's in-flight counters. */
export interface InflightLease {
  readonly endpointIndex: number;
  readonly promptTokens: number;
  /** Gives the claim back. Returns true the first time, false (and does nothing) after. */
  release(): boolean;
  readonly released: boolean;
}

export class InflightTracker {
  private reqs: Int32Array;
  private tokens: Float64Array;

  constructor(endpoints: number) {
    this.reqs = new Int32Array(endpoints);
    this.tokens = new Float64Array(endpoints);
  }

  get endpointCount(): number {
    return this.reqs.length;
  }

  /** Grows the tracker to at least `n` endpoints; existing counters are kept. */
  ensureEndpoints(n: number): void {
    if (n <= this.reqs.length) return;
    const reqs = new Int32Array(n);
    reqs.set(this.reqs);
    const tokens = new Float64Array(n);
    tokens.set(this.tokens);
    this.reqs = reqs;
    this.tokens = tokens;
  }

  /** Counts one request of `promptTokens` (≥ 0) as in flight on endpoint `index`. */
  acquire(index: number, promptTokens: number): InflightLease {
    this.check(index);
    const tokens = Number.isFinite(promptTokens) && promptTokens > 0 ? promptTokens : 0;
    this.reqs[index] = this.reqs[index]! + 1;
    this.tokens[index] = this.tokens[index]! + tokens;
    let released = false;
    const tracker = this;
    return {
      endpointIndex: index,
      promptTokens: tokens,
      get released() {
        return released;
      },
      release(): boolean {
        if (released) return false;
        released = true;
        tracker.reqs[index] = tracker.reqs[index]! - 1;
        // Snap to zero when idle so float drift cannot accumulate.
        const left = tracker.reqs[index]!;
        tracker.tokens[index] = left === 0 ? 0 : Math.max(0, tracker.tokens[index]! - tokens);
        return true;
      },
    };
  }

  requests(index: number): number {
    this.check(index);
    return this.reqs[index]!;
  }

  promptTokens(index: number): number {
    this.check(index);
    return this.tokens[index]!;
  }

  /** Sum of in-flight requests over all endpoints. */
  totalRequests(): number {
    let s = 0;
    for (let i = 0; i < this.reqs.length; i++) s += this.reqs[i]!;
    return s;
  }

  private check(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index >= this.reqs.length) {
      throw new RangeError(`endpoint index ${index} out of range 0..${this.reqs.length - 1}`);
    }
  }
}
