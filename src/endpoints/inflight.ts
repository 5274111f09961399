/**
 * Router-side accounting: requests and estimated prompt tokens the router has sent to each
 * endpoint and not yet seen finish.
 *
 * Why router-side: it is exact and fresh at the moment of the next decision (engine scrapes
 * are tens of ms old at best), which is what keeps a burst of identical requests from all
 * landing on one engine. Each routed request holds one lease; releasing it is idempotent so
 * a request that ends through two paths (stream end and client abort) is counted once.
 *
 * Prefill accounting: a request is also counted as *prefilling* from routing until the edge
 * reports its first response byte (`firstByte()`; for a streamed answer that is the first
 * token, so the engine's prefill is done) or until it ends. Why: time to first token is
 * decided by the prompts queued for prefill ahead of a request, not by how many requests
 * are decoding — an engine full of long decodes can still start a new prompt at once, and
 * equalising total in-flight counts (least-request) feeds the engines whose requests happen
 * to finish sooner with more prompts. Without first-byte reports prefilling equals in flight.
 */

/** One request's claim on an endpoint's in-flight counters. */
export interface InflightLease {
  readonly endpointIndex: number;
  readonly promptTokens: number;
  /** Gives the claim back. Returns true the first time, false (and does nothing) after. */
  release(): boolean;
  readonly released: boolean;
  /**
   * The engine answered its first byte: the request stops counting as prefilling. Returns
   * true the first time, false after, or once released.
   */
  firstByte(): boolean;
  readonly prefilling: boolean;
}

export class InflightTracker {
  private reqs: Int32Array;
  private tokens: Float64Array;
  private pre: Int32Array;

  constructor(endpoints: number) {
    this.reqs = new Int32Array(endpoints);
    this.tokens = new Float64Array(endpoints);
    this.pre = new Int32Array(endpoints);
  }

  get endpointCount(): number {
    return this.reqs.length;
  }

  /** Grows the tracker to at least `n` endpoints; existing counters are kept. */
  ensureEndpoints(n: number): void {
    if (n <= this.reqs.length) return;
    this.reqs = grown(this.reqs, new Int32Array(n));
    this.tokens = grown(this.tokens, new Float64Array(n));
    this.pre = grown(this.pre, new Int32Array(n));
  }

  /** Counts one request of `promptTokens` (≥ 0) as in flight on endpoint `index`. */
  acquire(index: number, promptTokens: number): InflightLease {
    this.check(index);
    const tokens = Number.isFinite(promptTokens) && promptTokens > 0 ? promptTokens : 0;
    this.reqs[index] = this.reqs[index]! + 1;
    this.tokens[index] = this.tokens[index]! + tokens;
    this.pre[index] = this.pre[index]! + 1;
    return new Lease(this, index, tokens);
  }

  /**
   * A lease's state change reaches the counters here (static so the lease class can touch
   * the private counters; nothing else calls it). `release`: the request leaves endpoint
   * `index` (and its prefill with it if still counted); otherwise only its prefill ends.
   */
  static settleLease(tracker: InflightTracker, index: number, tokens: number, prefilling: boolean, release: boolean): void {
    if (prefilling) tracker.pre[index] = tracker.pre[index]! - 1;
    if (!release) return;
    tracker.reqs[index] = tracker.reqs[index]! - 1;
    // Snap to zero when idle so float drift cannot accumulate.
    const left = tracker.reqs[index]!;
    tracker.tokens[index] = left === 0 ? 0 : Math.max(0, tracker.tokens[index]! - tokens);
  }

  /** Requests on `index` that have not answered their first byte yet. */
  prefillingRequests(index: number): number {
    this.check(index);
    return this.pre[index]!;
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

/**
 * One routed request's claim. A small class rather than an object of closures: one
 * allocation per request on the routing path instead of five (object, context, two
 * methods, two getters).
 */
class Lease implements InflightLease {
  private state = 0; // bit 0: released, bit 1: prefill done

  constructor(
    private readonly tracker: InflightTracker,
    readonly endpointIndex: number,
    readonly promptTokens: number,
  ) {}

  get released(): boolean {
    return (this.state & 1) !== 0;
  }

  get prefilling(): boolean {
    return this.state === 0;
  }

  release(): boolean {
    if ((this.state & 1) !== 0) return false;
    const prefilling = this.state === 0;
    this.state |= 3;
    InflightTracker.settleLease(this.tracker, this.endpointIndex, this.promptTokens, prefilling, true);
    return true;
  }

  firstByte(): boolean {
    if (this.state !== 0) return false;
    this.state = 2;
    InflightTracker.settleLease(this.tracker, this.endpointIndex, this.promptTokens, true, false);
    return true;
  }
}

function grown<T extends Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from);
  return to;
}
