/**
 * A mirror of the HTTP/2 stream-reset rate limit that Node's server applies per connection,
 * so the ext_proc server can retire a connection gracefully before the limit bites.
 *
 * Why: since nghttp2 1.57 (the CVE-2023-44487 "rapid reset" fix) a Node HTTP/2 server takes
 * at most a burst of 1000 incoming RST_STREAM frames per connection, refilled at 33 per
 * second; one more and it sends GOAWAY(INTERNAL_ERROR), failing every stream still open on
 * that connection. Envoy resets the ext_proc stream at the end of every HTTP request unless
 * its runtime flag `envoy.reloadable_features.ext_proc_graceful_grpc_close` is on, so above
 * ~33 requests/s per connection the router would drop its Envoy connection about every
 * thousand requests and Envoy would answer the requests in flight with 500s (measured:
 * docs/extproc.md). Node 20 cannot raise the limit (the streamResetBurst/streamResetRate
 * server options arrived in later Node releases). Retiring the connection with a graceful
 * GOAWAY(NO_ERROR) while tokens remain lets Envoy move new streams to a fresh connection.
 *
 * The bucket refills in whole seconds like nghttp2's; we only count elapsed whole seconds
 * since our own last update, which refills no faster than nghttp2 does (conservative).
 */

export const NGHTTP2_RESET_BURST = 1000;
export const NGHTTP2_RESET_RATE_PER_SEC = 33;

export class ResetBudget {
  private tokens: number;
  private lastSec: number;

  constructor(
    private readonly nowMs: () => number = () => performance.now(),
    private readonly burst = NGHTTP2_RESET_BURST,
    private readonly ratePerSec = NGHTTP2_RESET_RATE_PER_SEC,
  ) {
    this.tokens = burst;
    this.lastSec = Math.floor(nowMs() / 1000);
  }

  /** Records one reset received from the peer; returns the tokens left (may go negative). */
  consume(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens;
  }

  /** Tokens left now. */
  remaining(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const sec = Math.floor(this.nowMs() / 1000);
    if (sec > this.lastSec) {
      this.tokens = Math.min(this.burst, this.tokens + (sec - this.lastSec) * this.ratePerSec);
      this.lastSec = sec;
    }
  }
}
