/**
 * Retires an HTTP/2 connection from Envoy gracefully before Node's stream-reset rate limit
 * would kill it. This is the one place that says why the router still does this itself.
 *
 * The mechanism: since nghttp2 1.57 (the CVE-2023-44487 "rapid reset" mitigation) a Node
 * HTTP/2 server — and so grpc-js, which runs on it — takes at most a burst of 1000 incoming
 * RST_STREAM frames per connection, refilled at 33 per second; one more and nghttp2 sends
 * GOAWAY(INTERNAL_ERROR), failing every stream still open on that connection. Envoy resets
 * the ext_proc stream at the end of every HTTP request unless its runtime flag
 * `envoy.reloadable_features.ext_proc_graceful_grpc_close` is on, so above ~33 requests/s on
 * one connection the router would lose its Envoy connection about every thousand requests
 * and Envoy would answer the requests in flight on it with errors. Node 20 cannot raise the
 * limit (the `streamResetBurst` / `streamResetRate` server options came in later Node
 * releases) and grpc-js exposes no such setting, so: with the graceful-close flag on (the
 * shipped Envoy configs) no resets arrive and nothing here ever acts; without it, this
 * class mirrors nghttp2's token bucket per connection and retires the connection while
 * tokens remain. Delete it once the router runs on a Node whose HTTP/2 server lets the
 * limit be raised, or once every supported Envoy closes ext_proc streams gracefully.
 *
 * How: every stream of a connection is tracked; one that closes with an RST code, or before
 * we sent trailers, counts as a reset received from the peer. Once the peer has reset a stream
 * after our trailers, so does every stream that closes cleanly: nghttp2 charges every
 * RST_STREAM it receives, also one for a stream already closed, and a peer that half-closes
 * and then resets (Envoy without the flag: closeStream() then resetStream()) sends one after a
 * clean close whenever its END_STREAM was read, and answered with our trailers, before its
 * RST_STREAM arrived (20–170 of ~1,000 streams a connection on a loaded two-core machine, more
 * than the margin: nghttp2 failed the connection before it was retired). When the
 * connection's budget falls to (streams still open on it + margin), the connection gets the
 * two-step graceful GOAWAY: first "no new streams, every stream may finish" (last-stream-id
 * 2^31-1), then, once a PING round trip shows the peer saw it, the final GOAWAY and close when
 * the open streams end. Envoy opens a fresh connection for new streams meanwhile. What Node
 * cannot do: nghttp2 ignores new streams once any GOAWAY was sent (only its
 * shutdown-notice call, which Node does not expose, avoids that), so the streams the peer
 * opened in the round trip before it saw the first GOAWAY are refused (REFUSED_STREAM) at the
 * final one; they were never processed, and our Envoy configs' refused-stream retry re-sends
 * them. The bucket refills in whole seconds like nghttp2's, counted from our own last update,
 * which refills no faster than nghttp2 does (conservative).
 */
import { constants as http2Constants } from 'node:http2';
import type { Http2Session, ServerHttp2Stream } from 'node:http2';
import type { Logger } from '../logging/logger.js';

/** nghttp2's reset burst per connection and its refill rate. */
export const NGHTTP2_RESET_BURST = 1000;
export const NGHTTP2_RESET_RATE_PER_SEC = 33;

/** GOAWAY last-stream-id meaning "every stream may still finish" (first half of a graceful drain). */
export const MAX_STREAM_ID = 2 ** 31 - 1;

/** Default margin: retire while 100 resets beyond the streams still open remain. */
export const DEFAULT_RESET_BUDGET_MARGIN = 100;

/** A mirror of nghttp2's per-connection reset token bucket. */
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

interface SessionBudget {
  readonly budget: ResetBudget;
  open: number;
  retiring: boolean;
  /** The peer reset a stream after our trailers: it resets every stream, also ones that close cleanly. */
  resetsAfterTrailers: boolean;
}

export interface ConnectionRecyclerOptions {
  /** Retire when the budget falls to (streams open + margin); 0 disables recycling. */
  readonly margin: number;
  readonly logger: Logger;
  /** Recycling stops once the server is draining (the drain closes connections anyway). */
  readonly isRunning: () => boolean;
  /** Called once per retired connection (metrics). */
  readonly onRetired?: () => void;
  readonly nowMs?: () => number;
}

export class ConnectionRecycler {
  private readonly sessions = new WeakMap<Http2Session, SessionBudget>();
  private retired = 0;

  constructor(private readonly options: ConnectionRecyclerOptions) {}

  get enabled(): boolean {
    return this.options.margin > 0;
  }

  /** Connections retired early so far. */
  get recycled(): number {
    return this.retired;
  }

  /** Accounts one stream to its connection until it closes. */
  track(stream: ServerHttp2Stream): void {
    if (!this.enabled) return;
    const session = stream.session;
    if (session === undefined) return;
    let state = this.sessions.get(session);
    if (state === undefined) {
      state = { budget: new ResetBudget(this.options.nowMs), open: 0, retiring: false, resetsAfterTrailers: false };
      this.sessions.set(session, state);
    }
    const s = state;
    s.open++;
    stream.once('close', () => {
      s.open--;
      const reset = stream.rstCode !== http2Constants.NGHTTP2_NO_ERROR;
      const ended = stream.sentTrailers !== undefined;
      if (reset && ended) s.resetsAfterTrailers = true;
      if (reset || !ended || s.resetsAfterTrailers) this.onPeerReset(session, s);
    });
  }

  private onPeerReset(session: Http2Session, state: SessionBudget): void {
    const left = state.budget.consume();
    if (state.retiring || !this.options.isRunning()) return;
    if (left > state.open + this.options.margin) return;
    if (session.closed || session.destroyed) return;
    state.retiring = true;
    this.retired++;
    this.options.onRetired?.();
    this.options.logger.info('retiring ext_proc connection before the HTTP/2 reset limit', { open_streams: state.open, budget_left: left });
    gracefulGoaway(session);
  }
}

/**
 * The two-step graceful GOAWAY: no new streams, open ones finish; after a PING round trip
 * the final GOAWAY and close once the open streams have ended.
 */
function gracefulGoaway(session: Http2Session): void {
  try {
    session.goaway(http2Constants.NGHTTP2_NO_ERROR, MAX_STREAM_ID);
    session.ping(() => {
      if (!session.closed && !session.destroyed) session.close();
    });
  } catch {
    if (!session.closed && !session.destroyed) session.close();
  }
}
