/**
 * The gRPC server Envoy's ext_proc filter talks to, and its lifecycle. Each Process call is
 * one bidirectional stream per downstream HTTP request; this file only adapts grpc-js
 * calls to the transport-agnostic StreamHandler (events in, writes out, backpressure) and
 * owns start/stop: `stop({graceMs})` refuses new streams (GOAWAY + UNAVAILABLE), lets open
 * ones finish, and cancels the rest when the grace period ends, which finishes their
 * tickets as aborted.
 *
 * Connection recycling: each stream Envoy resets (it resets one per HTTP request unless
 * `ext_proc_graceful_grpc_close` is on) is counted against a mirror of Node's per-connection
 * RST_STREAM budget (reset-budget.ts); when the budget gets close to what the streams still
 * open on that connection could spend, the connection is retired with a graceful GOAWAY so
 * Node never kills it with GOAWAY(INTERNAL_ERROR) mid-request.
 */
import { constants as http2Constants } from 'node:http2';
import type { Http2Session, ServerHttp2Stream } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../telemetry/logger.js';
import { ResetBudget } from './reset-budget.js';
import { extProcServiceDefinition } from './ext-proc-proto.js';
import type { ProcessingRequest__Output, ProcessingResponse } from './ext-proc-proto.js';
import type { EdgeContext, ProcessStream, StreamHandler } from './stream-handler.js';

export interface ExtProcServerOptions {
  /** `host:port` to listen on; port 0 picks a free port. */
  readonly address: string;
  /** grpc-js `grpc.max_receive_message_length` (must exceed the largest BUFFERED body). */
  readonly maxReceiveMessageBytes: number;
  readonly edge: EdgeContext;
  readonly logger: Logger;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS advertised to Envoy (default 2^31-1). */
  readonly maxConcurrentStreams?: number;
  /**
   * Retire a connection when its reset budget falls to (streams open on it + this margin).
   * Default 100; 0 disables recycling (tests).
   */
  readonly resetBudgetMargin?: number;
  /** Clock for the reset budget (tests). */
  readonly nowMs?: () => number;
}

interface SessionState {
  readonly session: Http2Session;
  readonly budget: ResetBudget;
  open: number;
  retiring: boolean;
}

/** GOAWAY last-stream-id meaning "every stream may still finish" (first half of a graceful drain). */
const MAX_STREAM_ID = 2 ** 31 - 1;

export interface BoundAddress {
  readonly host: string;
  readonly port: number;
}

type ServerState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';
type ProcessCall = grpc.ServerDuplexStream<ProcessingRequest__Output, ProcessingResponse>;

export class ExtProcServer {
  private readonly server: grpc.Server;
  private state: ServerState = 'new';
  private readonly handlers = new Set<StreamHandler>();
  private readonly sessions = new WeakMap<Http2Session, SessionState>();
  private bound: BoundAddress | undefined;
  private recycled = 0;
  private warnedNoSession = false;

  constructor(private readonly options: ExtProcServerOptions) {
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes,
      'grpc.max_send_message_length': -1,
      'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 2 ** 31 - 1,
      // Keep channelz on: with 'grpc.enable_channelz': 0, grpc-js 1.14 no longer tracks the
      // sessions forceShutdown() destroys, so a drain could never cut open streams.
    });
    this.server.addService(extProcServiceDefinition(), {
      Process: (call: ProcessCall) => this.onCall(call),
    });
  }

  /** Binds and starts serving; resolves with the bound address (actual port if 0 was asked). */
  async start(): Promise<BoundAddress> {
    if (this.state !== 'new') throw new Error(`ext_proc server cannot start in state ${this.state}`);
    this.state = 'starting';
    const { host } = splitHostPort(this.options.address);
    const port = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(this.options.address, grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      );
    });
    this.bound = { host, port };
    this.state = 'running';
    this.options.logger.info('ext_proc server listening', { address: `${host}:${port}` });
    return this.bound;
  }

  get address(): BoundAddress | undefined {
    return this.bound;
  }

  /** Streams currently open. */
  openStreams(): number {
    return this.handlers.size;
  }

  /** Connections retired early to stay under Node's HTTP/2 reset limit. */
  recycledConnections(): number {
    return this.recycled;
  }

  /**
   * Stops taking new streams, waits up to `graceMs` for open ones to end, then cancels what
   * is left. Resolves when the server is fully stopped. Idempotent.
   */
  async stop(opts: { graceMs: number }): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    if (this.state === 'new') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    const open = this.handlers.size;
    if (open > 0) this.options.logger.info('ext_proc draining', { open_streams: open, grace_ms: opts.graceMs });
    await new Promise<void>((resolve) => {
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        if (this.handlers.size > 0) {
          this.options.logger.warn('ext_proc drain grace expired; cancelling open streams', { open_streams: this.handlers.size });
        }
        this.server.forceShutdown();
        // The cancelled calls report asynchronously; release them now so that every ticket
        // is finished when stop() resolves.
        for (const h of this.handlers) h.onCancel();
        this.handlers.clear();
        finish();
      }, Math.max(0, opts.graceMs));
      this.server.tryShutdown(() => finish());
    });
    this.state = 'stopped';
  }

  /**
   * Accounts the call's HTTP/2 stream to its connection and, when the stream closes, counts
   * a reset received from the peer: closed with an RST code, or before we sent trailers.
   */
  private trackSession(call: ProcessCall): void {
    if ((this.options.resetBudgetMargin ?? 100) <= 0) return;
    const stream = http2StreamOf(call);
    const session = stream?.session;
    if (stream === undefined || session === undefined) {
      if (!this.warnedNoSession) {
        this.warnedNoSession = true;
        this.options.logger.warn('cannot see HTTP/2 sessions of grpc-js calls; connection recycling is off');
      }
      return;
    }
    let st = this.sessions.get(session);
    if (st === undefined) {
      st = { session, budget: new ResetBudget(this.options.nowMs), open: 0, retiring: false };
      this.sessions.set(session, st);
    }
    const state = st;
    state.open++;
    stream.once('close', () => {
      state.open--;
      if (stream.rstCode !== http2Constants.NGHTTP2_NO_ERROR || stream.sentTrailers === undefined) this.onPeerReset(state);
    });
  }

  /** One stream of `state`'s connection was reset by the peer. */
  private onPeerReset(state: SessionState): void {
    const left = state.budget.consume();
    if (state.retiring || this.state !== 'running') return;
    if (left > state.open + (this.options.resetBudgetMargin ?? 100)) return;
    const session = state.session;
    if (session.closed || session.destroyed) return;
    state.retiring = true;
    this.recycled++;
    this.options.logger.info('retiring ext_proc connection before the HTTP/2 reset limit', { open_streams: state.open, budget_left: left });
    try {
      // First GOAWAY: no new streams here, every stream may finish; Envoy reconnects.
      session.goaway(http2Constants.NGHTTP2_NO_ERROR, MAX_STREAM_ID);
      // After a round trip the peer has seen it: the final GOAWAY, closing once streams end.
      session.ping(() => {
        if (!session.closed && !session.destroyed) session.close();
      });
    } catch {
      if (!session.closed && !session.destroyed) session.close();
    }
  }

  private onCall(call: ProcessCall): void {
    if (this.state !== 'running') {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'cacheroute is shutting down' });
      return;
    }
    let ended = false;
    let paused = false;
    const stream: ProcessStream = {
      metadataValue: (key) => {
        const v = call.metadata.get(key)[0];
        if (v === undefined) return undefined;
        return typeof v === 'string' ? v : v.toString('utf8');
      },
      write: (message) => {
        if (ended || call.destroyed || call.writableEnded) return;
        if (!call.write(message) && !paused) {
          // Backpressure: stop reading Envoy's messages until our answers drain.
          paused = true;
          call.pause();
          call.once('drain', () => {
            paused = false;
            call.resume();
          });
        }
      },
      end: () => {
        if (ended) return;
        ended = true;
        if (!call.destroyed && !call.writableEnded) call.end();
      },
      fail: (code, details) => {
        if (ended) return;
        ended = true;
        if (!call.destroyed && !call.writableEnded) call.emit('error', { code, details });
      },
    };
    const handler = this.options.edge.open(stream);
    this.handlers.add(handler);
    this.trackSession(call);
    const release = (): void => {
      handler.onCancel();
      this.handlers.delete(handler);
    };
    call.on('data', (msg: ProcessingRequest__Output) => handler.onMessage(msg));
    call.on('end', () => handler.onHalfClose());
    call.on('cancelled', () => handler.onCancel());
    call.on('error', (err: unknown) => handler.onTransportError(err));
    call.on('close', release);
    call.on('finish', () => {
      // Our side is done; once Envoy's side ends too, the call closes and is released.
      if (call.readableEnded) release();
    });
  }
}

/** The HTTP/2 stream under a grpc-js server call (grpc-js internals; undefined if they change). */
function http2StreamOf(call: ProcessCall): ServerHttp2Stream | undefined {
  type Link = { stream?: ServerHttp2Stream; nextCall?: Link };
  let link = (call as unknown as { call?: Link }).call;
  for (let depth = 0; link !== undefined && depth < 8; depth++) {
    if (link.stream?.session) return link.stream;
    link = link.nextCall;
  }
  return undefined;
}

/** Splits `host:port` / `[v6]:port`. */
export function splitHostPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]*):(\d+)$/.exec(address);
  if (!m) throw new Error(`invalid address ${address} (expected host:port)`);
  return { host: m[1]!, port: Number(m[2]) };
}
