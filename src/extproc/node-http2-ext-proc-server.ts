/**
 * The ext_proc gRPC server on Node's own HTTP/2 stack (the default transport): it serves
 * the one bidirectional method Envoy calls, /envoy.service.ext_proc.v3.ExternalProcessor/Process,
 * and hands each stream to the transport-agnostic StreamHandler.
 *
 * Why not grpc-js here: measured on the ext_proc load benchmark, grpc-js and its per-call
 * Node stream objects (metadata, interceptor chain, a Duplex per call) cost about as much
 * CPU per stream as all of the router's own work; serving the single method directly on
 * node:http2 needs ≈ 0.6× the CPU per stream (docs/extproc.md, "Performance"). grpc-js
 * stays available as `server.transport: grpc-js` (grpc-js-ext-proc-server.ts); the
 * integration tests run both against a grpc-js client, and the e2e suite runs Envoy
 * against this one.
 *
 * The gRPC contract kept (gRPC over HTTP/2 protocol): POST + application/grpc content type
 * (else 405 / 415), unknown method → UNIMPLEMENTED; length-prefixed messages across DATA
 * frames (grpc-message-reader.ts), oversized → RESOURCE_EXHAUSTED, compressed →
 * UNIMPLEMENTED (we advertise identity only), undecodable → INTERNAL; `grpc-timeout`
 * deadlines → DEADLINE_EXCEEDED and the ticket finished as aborted; status in trailers
 * (trailers-only when no message was sent), `grpc-message` percent-encoded; write
 * backpressure pauses reading; a stream that closes without our trailers takes the
 * handler's cancel path. Connection-level: reset-budget recycling (connection-recycler.ts),
 * keepalive PINGs (session-keepalive.ts), and a graceful drain on stop — GOAWAY in two
 * steps, open streams finish, whatever is left when the grace period ends is cancelled.
 */
import http2 from 'node:http2';
import type { Http2Server, Http2Session, IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Logger } from '../logging/logger.js';
import { ConnectionRecycler, gracefulGoaway } from './connection-recycler.js';
import { extProcServiceDefinition, PROCESS_METHOD_PATH } from './ext-proc-proto.js';
import type { ProcessingRequest__Output, ProcessingResponse } from './ext-proc-proto.js';
import type { BoundAddress, ExtProcServer, ExtProcServerOptions } from './ext-proc-server.js';
import { splitHostPort } from './ext-proc-server.js';
import { GrpcMessageReader } from './grpc-message-reader.js';
import type { MessageReadError, MessageSink } from './grpc-message-reader.js';
import { parseGrpcTimeoutMs } from './grpc-timeout.js';
import { startSessionKeepalive } from './session-keepalive.js';
import type { ProcessStream, StreamHandler } from './stream-handler.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants;

const RESPONSE_HEADERS: OutgoingHttpHeaders = {
  ':status': 200,
  'content-type': 'application/grpc',
  'grpc-accept-encoding': 'identity',
};
const OK_TRAILERS: OutgoingHttpHeaders = { 'grpc-status': '0' };

/** How long a peer may keep its side open after our status before we reset the stream. */
export const PEER_CLOSE_GRACE_MS = 10_000;

/** Node's per-connection memory cap, in MB: room for a 10 MB BUFFERED body plus echoes. */
const MAX_SESSION_MEMORY_MB = 256;

type ServerState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** `grpc-message` encoding: percent-encode everything outside printable ASCII, and '%'. */
export function encodeGrpcMessage(details: string): string {
  return encodeURIComponent(details).replace(/%20/g, ' ');
}

interface Codec {
  requestDeserialize(buf: Buffer): ProcessingRequest__Output;
  responseSerialize(msg: ProcessingResponse): Buffer;
}

/** Answers a stream with a status and nothing else (gRPC "trailers-only"). */
function trailersOnly(stream: ServerHttp2Stream, code: GrpcStatus, details: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) },
    { endStream: true },
  );
}

/** One Process call: the ProcessStream the handler writes to, and the sink of decoded messages. */
class Http2Call implements ProcessStream, MessageSink {
  handler!: StreamHandler;
  private ended = false;
  private released = false;
  private paused = false;
  private trailers = OK_TRAILERS;
  private readonly reader: GrpcMessageReader;
  private deadline: NodeJS.Timeout | undefined;
  private linger: NodeJS.Timeout | undefined;

  constructor(
    private readonly owner: NodeHttp2ExtProcServer,
    readonly stream: ServerHttp2Stream,
    private readonly headers: IncomingHttpHeaders,
    private readonly codec: Codec,
    maxMessageBytes: number,
  ) {
    this.reader = new GrpcMessageReader(maxMessageBytes);
  }

  /** Wires the stream's events; called once the handler exists. */
  attach(timeoutMs: number | undefined): void {
    const stream = this.stream;
    stream.on('wantTrailers', () => {
      stream.sendTrailers(this.trailers);
      this.stopPeer();
    });
    stream.on('data', (chunk: Buffer) => this.reader.push(chunk, this));
    stream.on('end', () => this.onPeerEnd());
    stream.on('error', (err: unknown) => this.onStreamError(err));
    stream.on('close', () => this.release());
    if (timeoutMs !== undefined) {
      this.deadline = setTimeout(() => this.onDeadline(), timeoutMs);
      this.deadline.unref();
    }
  }

  metadataValue(key: string): string | undefined {
    if (key.startsWith(':')) return undefined;
    const v = this.headers[key];
    return Array.isArray(v) ? v[0] : v;
  }

  write(message: ProcessingResponse): void {
    const stream = this.stream;
    if (this.ended || stream.destroyed) return;
    if (!stream.headersSent) stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    const body = this.codec.responseSerialize(message);
    const frame = Buffer.allocUnsafe(5 + body.length);
    frame[0] = 0;
    frame.writeUInt32BE(body.length, 1);
    body.copy(frame, 5);
    if (!stream.write(frame) && !this.paused) {
      // Backpressure: stop reading Envoy's messages until our answers drain.
      this.paused = true;
      stream.pause();
      stream.once('drain', () => {
        this.paused = false;
        if (!stream.destroyed) stream.resume();
      });
    }
  }

  end(): void {
    this.finish(OK_TRAILERS);
  }

  fail(code: number, details: string): void {
    this.finish({ 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) });
  }

  /** A complete request message (MessageSink). */
  message(payload: Buffer): void {
    if (this.ended) return;
    let msg: ProcessingRequest__Output;
    try {
      msg = this.codec.requestDeserialize(payload);
    } catch (err) {
      this.fail(GrpcStatus.INTERNAL, `cannot decode ProcessingRequest: ${err instanceof Error ? err.message : String(err)}`);
      this.handler.onCancel();
      return;
    }
    this.handler.onMessage(msg);
  }

  /** A framing error (MessageSink): the stream cannot continue. */
  error(err: MessageReadError): void {
    if (err.kind === 'compressed') this.fail(GrpcStatus.UNIMPLEMENTED, 'compressed messages are not supported (grpc-accept-encoding: identity)');
    else this.fail(GrpcStatus.RESOURCE_EXHAUSTED, `received message larger than max (${err.bytes} vs. ${err.limit})`);
    this.handler.onCancel();
  }

  /** Cancels the call (drain deadline): the handler finishes its ticket as aborted. */
  cancel(): void {
    this.ended = true;
    if (!this.stream.destroyed) this.stream.close(NGHTTP2_CANCEL);
    this.release();
  }

  /**
   * Node reports a peer's RST_STREAM with any code but NO_ERROR/CANCEL as a stream error.
   * Envoy ends every ext_proc stream with such a reset when graceful close is off, so a
   * peer reset is a cancellation (as grpc-js reports it), not a transport failure.
   */
  private onStreamError(err: unknown): void {
    if ((err as { code?: unknown } | null)?.code === 'ERR_HTTP2_STREAM_ERROR') this.handler.onCancel();
    else this.handler.onTransportError(err);
  }

  private onPeerEnd(): void {
    if (this.reader.midMessage) {
      this.fail(GrpcStatus.INTERNAL, 'stream ended inside a message');
      this.handler.onCancel();
      return;
    }
    this.handler.onHalfClose();
  }

  private onDeadline(): void {
    this.deadline = undefined;
    if (this.released) return;
    this.fail(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded');
    this.handler.onCancel();
  }

  private finish(trailers: OutgoingHttpHeaders): void {
    if (this.ended) return;
    this.ended = true;
    const stream = this.stream;
    if (stream.destroyed) return;
    if (!stream.headersSent) {
      // Nothing was sent: the status goes in the only HEADERS frame.
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...trailers }, { endStream: true });
      this.stopPeer();
      return;
    }
    this.trailers = trailers;
    stream.end();
  }

  /**
   * Our status is out but the peer has not ended its side. gRPC clients (Envoy, grpc-js)
   * close the stream when they read the status; one that does not would hold the stream
   * open forever, so after a grace period it gets RST_STREAM(NO_ERROR) (HTTP/2 §8.1: stop
   * sending, the response is complete). Not sent at once: a reset submitted right behind
   * the trailers can overtake them in nghttp2 and the peer would never see the status.
   */
  private stopPeer(): void {
    const stream = this.stream;
    if (stream.readableEnded || stream.destroyed || stream.closed || this.linger !== undefined) return;
    this.linger = setTimeout(() => {
      this.linger = undefined;
      if (!stream.destroyed && !stream.closed) stream.close(NGHTTP2_NO_ERROR);
    }, this.owner.peerCloseGraceMs);
    this.linger.unref();
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    if (this.linger !== undefined) clearTimeout(this.linger);
    this.handler.onCancel();
    this.owner.released(this);
  }
}

export class NodeHttp2ExtProcServer implements ExtProcServer {
  readonly transport = 'node-http2' as const;
  private readonly server: Http2Server;
  private state: ServerState = 'new';
  private readonly calls = new Set<Http2Call>();
  private readonly sessions = new Set<Http2Session>();
  private readonly recycler: ConnectionRecycler;
  private readonly codec: Codec;
  private bound: BoundAddress | undefined;
  private onIdle: (() => void) | undefined;
  readonly peerCloseGraceMs: number;

  constructor(private readonly options: ExtProcServerOptions) {
    this.codec = extProcServiceDefinition().Process;
    this.peerCloseGraceMs = options.peerCloseGraceMs ?? PEER_CLOSE_GRACE_MS;
    this.recycler = ConnectionRecycler.forServer(options, () => this.state === 'running');
    this.server = http2.createServer({
      settings: { maxConcurrentStreams: options.maxConcurrentStreams ?? 2 ** 31 - 1 },
      maxSessionMemory: MAX_SESSION_MEMORY_MB,
    });
    this.server.on('session', (session: Http2Session) => this.onSession(session));
    this.server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => this.onStream(stream, headers));
    this.server.on('sessionError', (err: Error) => options.logger.debug('ext_proc connection error', { error: err.message }));
  }

  async start(): Promise<BoundAddress> {
    if (this.state !== 'new') throw new Error(`ext_proc server cannot start in state ${this.state}`);
    this.state = 'starting';
    const { host, port } = splitHostPort(this.options.address);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve();
      });
    }).catch((err: unknown) => {
      this.state = 'stopped';
      throw err;
    });
    this.server.on('error', (err: Error) => this.options.logger.error('ext_proc server error', { error: err.message }));
    const a = this.server.address();
    this.bound = { host, port: typeof a === 'object' && a !== null ? a.port : port };
    this.state = 'running';
    this.options.logger.info('ext_proc server listening', { address: `${host}:${this.bound.port}`, transport: this.transport });
    return this.bound;
  }

  get address(): BoundAddress | undefined {
    return this.bound;
  }

  openStreams(): number {
    return this.calls.size;
  }

  recycledConnections(): number {
    return this.recycler.recycled;
  }

  async stop(opts: { graceMs: number }): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    if (this.state === 'new' || this.state === 'starting') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    const open = this.calls.size;
    if (open > 0) this.options.logger.info('ext_proc draining', { open_streams: open, grace_ms: opts.graceMs });
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of this.sessions) gracefulGoaway(session);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.onIdle = undefined;
        if (this.calls.size > 0) {
          this.options.logger.warn('ext_proc drain grace expired; cancelling open streams', { open_streams: this.calls.size });
        }
        for (const call of [...this.calls]) call.cancel();
        for (const session of this.sessions) if (!session.destroyed) session.destroy();
        resolve();
      }, Math.max(0, opts.graceMs));
      this.onIdle = () => {
        clearTimeout(timer);
        this.onIdle = undefined;
        resolve();
      };
      this.checkIdle();
    });
    // Every session is closed or destroyed by now; the listener closes with the last one.
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1000).unref())]);
    this.state = 'stopped';
  }

  /** A call's stream closed (Http2Call.release). */
  released(call: Http2Call): void {
    this.calls.delete(call);
    this.checkIdle();
  }

  private checkIdle(): void {
    if (this.onIdle !== undefined && this.calls.size === 0 && this.sessions.size === 0) this.onIdle();
  }

  private onSession(session: Http2Session): void {
    this.sessions.add(session);
    session.on('error', (err: Error) => this.options.logger.debug('ext_proc connection error', { error: err.message }));
    session.once('close', () => {
      this.sessions.delete(session);
      this.checkIdle();
    });
    if (this.state !== 'running') {
      gracefulGoaway(session);
      return;
    }
    const keepalive = this.options.keepalive;
    if (keepalive !== undefined) {
      startSessionKeepalive(session, keepalive, () => this.options.logger.warn('ext_proc connection missed its keepalive PING; closing it', {}));
    }
  }

  private onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    // Errors surface as 'close' (and, for a call, through the handler); never unhandled.
    stream.on('error', () => {});
    if (this.state !== 'running') return trailersOnly(stream, GrpcStatus.UNAVAILABLE, 'cacheroute is shutting down');
    if (headers[':method'] !== 'POST') {
      stream.respond({ ':status': 405, allow: 'POST' }, { endStream: true });
      return;
    }
    const contentType = headers['content-type'];
    if (contentType === undefined || !/^application\/grpc($|[+;])/.test(contentType)) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    if (headers[':path'] !== PROCESS_METHOD_PATH) {
      return trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${String(headers[':path']).slice(0, 128)}`);
    }
    let timeoutMs: number | undefined;
    try {
      timeoutMs = parseGrpcTimeoutMs(headers['grpc-timeout'] as string | undefined);
    } catch (err) {
      return trailersOnly(stream, GrpcStatus.INTERNAL, err instanceof Error ? err.message : String(err));
    }
    const call = new Http2Call(this, stream, headers, this.codec, this.options.maxReceiveMessageBytes);
    call.handler = this.options.edge.open(call);
    this.calls.add(call);
    this.recycler.track(stream);
    call.attach(timeoutMs);
  }
}
