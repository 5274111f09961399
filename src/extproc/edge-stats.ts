/**
 * Observer the telemetry layer plugs into the edge to count stream lifecycles and errors
 * by kind, without the edge depending on any metrics library. Defaults to a no-op.
 */
import type { ErrorCode } from '../core/errors.js';

/**
 * Kinds reported through streamError: a RouterError code that produced a local reply (or,
 * for PROTOCOL, ended the stream), `ABORTED` when a routed request ended before its
 * response completed (client gone, reset), `TRANSPORT` for a gRPC transport error, `IDLE` for a stream expired by the idle timeout.
 */
export type StreamErrorKind = ErrorCode | 'ABORTED' | 'TRANSPORT' | 'IDLE';

export interface EdgeStats {
  streamOpened(): void;
  streamClosed(): void;
  streamError(kind: string): void;
  /** An Envoy connection was retired before Node's HTTP/2 reset limit (connection-recycler.ts). */
  connectionRetired?(): void;
}

export const noopEdgeStats: EdgeStats = {
  streamOpened: () => {},
  streamClosed: () => {},
  streamError: () => {},
};
