/**
 * The gRPC server Envoy's ext_proc filter talks to, and its lifecycle. Each Process call is
 * one bidirectional stream per downstream HTTP request; this file only adapts grpc-js
 * calls to the transport-agnostic StreamHandler (events in, writes out, backpressure) and
 * owns start/stop: `stop({graceMs})` refuses new streams (GOAWAY + UNAVAILABLE), lets open
 * ones finish, and cancels the rest when the grace period ends, which finishes their
 * tickets as aborted.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../telemetry/logger.js';
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
  private bound: BoundAddress | undefined;

  constructor(private readonly options: ExtProcServerOptions) {
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes,
      'grpc.max_send_message_length': -1,
      'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 2 ** 31 - 1,
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
        finish();
      }, Math.max(0, opts.graceMs));
      this.server.tryShutdown(() => finish());
    });
    this.state = 'stopped';
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

/** Splits `host:port` / `[v6]:port`. */
export function splitHostPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]*):(\d+)$/.exec(address);
  if (!m) throw new Error(`invalid address ${address} (expected host:port)`);
  return { host: m[1]!, port: Number(m[2]) };
}
