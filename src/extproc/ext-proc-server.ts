/**
 * What the rest of the router sees of the ext_proc gRPC server, whichever transport serves
 * it: start, a graceful stop, and a few gauges. `createExtProcServer` picks the transport
 * from config (`server.transport`): node-http2 (default, node-http2-ext-proc-server.ts) or
 * grpc-js (grpc-js-ext-proc-server.ts). Both hand every stream to the same StreamHandler.
 */
import type { Logger } from '../logging/logger.js';
import type { KeepaliveOptions } from './session-keepalive.js';
import type { EdgeContext } from './stream-handler.js';

export type ExtProcTransport = 'node-http2' | 'grpc-js';

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
  /** node-http2: how long a peer may keep its side open after our status (default 10 s; tests). */
  readonly peerCloseGraceMs?: number;
  /** Clock for the reset budget (tests). */
  readonly nowMs?: () => number;
}

export interface BoundAddress {
  readonly host: string;
  readonly port: number;
}

export interface ExtProcServer {
  readonly transport: ExtProcTransport;
  /** Binds and starts serving; resolves with the bound address (actual port if 0 was asked). */
  start(): Promise<BoundAddress>;
  readonly address: BoundAddress | undefined;
  /** Streams currently open. */
  openStreams(): number;
  /** Connections retired early to stay under Node's HTTP/2 reset limit. */
  recycledConnections(): number;
  /**
   * Stops taking new streams, waits up to `graceMs` for open ones to end, then cancels what
   * is left (their tickets finish as aborted). Resolves when fully stopped. Idempotent.
   */
  stop(opts: { graceMs: number }): Promise<void>;
}

/** Splits `host:port` / `[v6]:port`. */
export function splitHostPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]*):(\d+)$/.exec(address);
  if (!m) throw new Error(`invalid address ${address} (expected host:port)`);
  return { host: m[1]!, port: Number(m[2]) };
}
