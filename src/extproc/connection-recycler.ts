/**
 * Retires an HTTP/2 connection from Envoy gracefully before Node's RST_STREAM rate limit
 * would kill it (see reset-budget.ts for the limit and why Envoy hits it).
 *
 * Every stream of a connection is tracked; one that closes with an RST code, or before we
 * sent trailers, counts as a reset received from the peer. When the connection's budget
 * gets close to what the streams still open on it could spend (open + margin), the
 * connection gets the two-step graceful GOAWAY: first "no new streams, every stream may
 * finish" (last-stream-id 2^31-1), then, once a PING round trip shows the peer saw it, the
 * final GOAWAY and close when the open streams end. Envoy opens a fresh connection for new
 * streams meanwhile. Used by both ext_proc transports.
 */
import { constants as http2Constants } from 'node:http2';
import type { Http2Session, ServerHttp2Stream } from 'node:http2';
import type { Logger } from '../logging/logger.js';
import { ResetBudget } from './reset-budget.js';
import type { EdgeContext } from './stream-handler.js';

/** GOAWAY last-stream-id meaning "every stream may still finish" (first half of a graceful drain). */
export const MAX_STREAM_ID = 2 ** 31 - 1;

/** Default margin: retire while 100 resets beyond the streams still open remain. */
export const DEFAULT_RESET_BUDGET_MARGIN = 100;

interface SessionBudget {
  readonly budget: ResetBudget;
  open: number;
  retiring: boolean;
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

  /** The recycler of a server built from ExtProcServerOptions-like settings. */
  static forServer(
    opts: { readonly resetBudgetMargin?: number; readonly logger: Logger; readonly nowMs?: () => number; readonly edge: EdgeContext },
    isRunning: () => boolean,
  ): ConnectionRecycler {
    const stats = opts.edge.stats;
    return new ConnectionRecycler({
      margin: opts.resetBudgetMargin ?? DEFAULT_RESET_BUDGET_MARGIN,
      logger: opts.logger,
      isRunning,
      ...(stats.connectionRetired !== undefined ? { onRetired: () => stats.connectionRetired!() } : {}),
      ...(opts.nowMs !== undefined ? { nowMs: opts.nowMs } : {}),
    });
  }

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
      state = { budget: new ResetBudget(this.options.nowMs), open: 0, retiring: false };
      this.sessions.set(session, state);
    }
    const s = state;
    s.open++;
    stream.once('close', () => {
      s.open--;
      if (stream.rstCode !== http2Constants.NGHTTP2_NO_ERROR || stream.sentTrailers === undefined) this.onPeerReset(session, s);
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
export function gracefulGoaway(session: Http2Session): void {
  try {
    session.goaway(http2Constants.NGHTTP2_NO_ERROR, MAX_STREAM_ID);
    session.ping(() => {
      if (!session.closed && !session.destroyed) session.close();
    });
  } catch {
    if (!session.closed && !session.destroyed) session.close();
  }
}
