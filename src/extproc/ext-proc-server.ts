/**
 * The ext_proc gRPC server, on @grpc/grpc-js. Each Process call is one bidirectional stream
 * per downstream HTTP request; this file only adapts grpc-js calls to the transport-agnostic
 * StreamHandler (events in, writes out, backpressure) and owns start/stop:
 * `stop({graceMs})` refuses new streams (GOAWAY + UNAVAILABLE), lets open ones finish, and
 * cancels the rest when the grace period ends, which finishes their tickets as aborted.
 * gRPC itself — framing, deadlines (`grpc-timeout`), message size limits, keepalive PINGs,
 * status trailers — is grpc-js'; protobuf is proto-loader's (ext-proc-proto.ts). Connections
 * are retired before Node's RST_STREAM limit by connection-recycler.ts (which says why),
 * reaching the HTTP/2 stream under each grpc-js call.
 */
import type { ServerHttp2Stream } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { ConnectionRecycler, DEFAULT_RESET_BUDGET_MARGIN } from './connection-recycler.js';
import { extProcServiceDefinition } from './ext-proc-proto.js';
import type { ProcessingRequest__Output, ProcessingResponse } from './ext-proc-proto.js';
import type { Logger } from '../logging/logger.js';
import type { EdgeContext } from './edge-context.js';
import type { ProcessStream } from './stream-env.js';
import type { StreamHandler } from './stream-handler.js';
import { parseListenAddress } from '../util/host-port.js';

/** Server keepalive (grpc-js' `grpc.keepalive_time_ms` / `grpc.keepalive_timeout_ms`). */
export interface KeepaliveOptions {
  /** Interval between PINGs on a connection; 0 turns keepalive off. */
  readonly timeMs: number;
  /** A PING not acknowledged within this closes the connection (and cancels its streams). */
  readonly timeoutMs: number;
}

/** A further gRPC service served on the same server and port (e.g. the access log receiver). */
export interface GrpcServiceBinding {
  readonly definition: grpc.ServiceDefinition;
  readonly implementation: grpc.UntypedServiceImplementation;
}

export interface ExtProcServerOptions {
  /** `host:port` to listen on; port 0 picks a free port. */
  readonly address: string;
  /** Largest gRPC message accepted (must exceed the largest BUFFERED body). */
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
  /** Server keepalive PINGs; absent or timeMs 0 = off. */
  readonly keepalive?: KeepaliveOptions;
  /** Clock for the reset budget (tests). */
  readonly nowMs?: () => number;
  /** Further services on the same port. */
  readonly services?: readonly GrpcServiceBinding[];
}

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
  private readonly recycler: ConnectionRecycler;
  private bound: BoundAddress | undefined;
  private warnedNoSession = false;

  constructor(private readonly options: ExtProcServerOptions) {
    const stats = options.edge.stats;
    this.recycler = new ConnectionRecycler({
      margin: options.resetBudgetMargin ?? DEFAULT_RESET_BUDGET_MARGIN,
      logger: options.logger,
      isRunning: () => this.state === 'running',
      ...(stats.connectionRetired !== undefined ? { onRetired: () => stats.connectionRetired!() } : {}),
      ...(options.nowMs !== undefined ? { nowMs: options.nowMs } : {}),
    });
    const keepalive = options.keepalive;
    this.server = new grpc.Server({
      ...(keepalive !== undefined && keepalive.timeMs > 0
        ? { 'grpc.keepalive_time_ms': keepalive.timeMs, 'grpc.keepalive_timeout_ms': keepalive.timeoutMs }
        : {}),
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes,
      'grpc.max_send_message_length': -1,
      'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 2 ** 31 - 1,
      // Keep channelz on: with 'grpc.enable_channelz': 0, grpc-js 1.14 no longer tracks the
      // sessions forceShutdown() destroys, so a drain could never cut open streams.
    });
    this.server.addService(extProcServiceDefinition(), {
      Process: (call: ProcessCall) => this.onCall(call),
    });
    for (const s of options.services ?? []) this.server.addService(s.definition, s.implementation);
  }

  /** Binds and starts serving; resolves with the bound address (actual port if 0 was asked). */
  async start(): Promise<BoundAddress> {
    if (this.state !== 'new') throw new Error(`ext_proc server cannot start in state ${this.state}`);
    this.state = 'starting';
    const { host } = parseListenAddress(this.options.address);
    const port = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(this.options.address, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
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
    return this.recycler.recycled;
  }

  /**
   * Stops taking new streams, waits up to `graceMs` for open ones to end, then cancels what
   * is left (their tickets finish as aborted). Resolves when fully stopped. Idempotent.
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
      const timer = setTimeout(
        () => {
          if (this.handlers.size > 0) {
            this.options.logger.warn('ext_proc drain grace expired; cancelling open streams', { open_streams: this.handlers.size });
          }
          this.server.forceShutdown();
          // The cancelled calls report asynchronously; release them now so that every ticket
          // is finished when stop() resolves.
          for (const h of this.handlers) h.onCancel();
          this.handlers.clear();
          finish();
        },
        Math.max(0, opts.graceMs),
      );
      this.server.tryShutdown(() => finish());
    });
    this.state = 'stopped';
  }

  /** Hands the call's HTTP/2 stream to the connection recycler. */
  private trackSession(call: ProcessCall): void {
    if (!this.recycler.enabled) return;
    const stream = http2StreamOf(call);
    if (stream === undefined) {
      if (!this.warnedNoSession) {
        this.warnedNoSession = true;
        this.options.logger.warn('cannot see HTTP/2 sessions of grpc-js calls; connection recycling is off');
      }
      return;
    }
    this.recycler.track(stream);
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
