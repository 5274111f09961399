/**
 * What the ext_proc edge reports about its gRPC streams, as a tiny interface so the edge
 * does not depend on prom-client. src/telemetry/metrics.ts implements it; the edge gets it
 * from the composition root (src/app.ts) and calls it on stream open/close and on errors.
 *
 * Kinds are a closed set so they can label a metric. Envoy ending a finished stream with
 * CANCELLED is the normal way a stream ends (docs/envoy-ext-proc.md §7.8): the edge should
 * not report that as an error; `client_cancelled` is for a stream reset before the
 * request was answered (client gone mid-request).
 */
import { isRouterError } from '../core/errors.js';
import type { ErrorCode } from '../core/errors.js';

export const STREAM_ERROR_KINDS = [
  'client_cancelled', // stream reset before the router answered
  'protocol', // Envoy broke the conversation rules (RouterError PROTOCOL)
  'bad_request',
  'payload_too_large',
  'unsupported_media',
  'no_endpoint',
  'overloaded',
  'bad_config',
  'internal',
  'transport', // write failed / stream errored below the protocol
] as const;
export type StreamErrorKind = (typeof STREAM_ERROR_KINDS)[number];

export interface EdgeStats {
  /** An ext_proc stream (one per HTTP request) started. */
  streamOpened(): void;
  /** The stream ended, however it ended (pair of every streamOpened). */
  streamClosed(): void;
  /** Something went wrong on a stream (at most once per stream is the intent). */
  streamError(kind: StreamErrorKind): void;
  /** The router answered with an ImmediateResponse carrying this HTTP status. */
  immediateResponse(status: number): void;
}

export const noopEdgeStats: EdgeStats = {
  streamOpened: () => {},
  streamClosed: () => {},
  streamError: () => {},
  immediateResponse: () => {},
};

const BY_CODE: Record<ErrorCode, StreamErrorKind> = {
  BAD_REQUEST: 'bad_request',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  UNSUPPORTED_MEDIA: 'unsupported_media',
  NO_ENDPOINT: 'no_endpoint',
  OVERLOADED: 'overloaded',
  BAD_CONFIG: 'bad_config',
  PROTOCOL: 'protocol',
  INTERNAL: 'internal',
};

/** Maps anything thrown on a stream to its kind (RouterError codes; otherwise `transport`). */
export function streamErrorKindOf(err: unknown): StreamErrorKind {
  if (isRouterError(err)) return BY_CODE[err.code];
  return 'transport';
}
