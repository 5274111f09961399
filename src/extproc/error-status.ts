/**
 * The one table that turns a RouterError code into what the edge sends: an HTTP status
 * for an ImmediateResponse (client-visible) and a gRPC status for the rare cases where the
 * ext_proc stream itself is ended with an error (peer broke the protocol). Nothing else in
 * the router knows about HTTP or gRPC statuses.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ErrorCode } from '../core/errors.js';

export interface ErrorStatus {
  /** HTTP status of the ImmediateResponse sent to the client. */
  readonly http: number;
  /** gRPC status used if the ext_proc stream must be ended with this error. */
  readonly grpc: GrpcStatus;
}

export const ERROR_STATUS: Readonly<Record<ErrorCode, ErrorStatus>> = {
  BAD_REQUEST: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  PAYLOAD_TOO_LARGE: { http: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  UNSUPPORTED_MEDIA: { http: 415, grpc: GrpcStatus.INVALID_ARGUMENT },
  NO_ENDPOINT: { http: 503, grpc: GrpcStatus.UNAVAILABLE },
  OVERLOADED: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  PRECONDITION_FAILED: { http: 412, grpc: GrpcStatus.FAILED_PRECONDITION },
  BAD_CONFIG: { http: 500, grpc: GrpcStatus.FAILED_PRECONDITION },
  PROTOCOL: { http: 500, grpc: GrpcStatus.INVALID_ARGUMENT },
  INTERNAL: { http: 500, grpc: GrpcStatus.INTERNAL },
};

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_STATUS[code].http;
}

export function grpcStatusOf(code: ErrorCode): GrpcStatus {
  return ERROR_STATUS[code].grpc;
}

/** gRPC status a stream is ended with when it was idle too long (stream-handler.ts). */
export const IDLE_TIMEOUT_GRPC_STATUS: GrpcStatus = GrpcStatus.DEADLINE_EXCEEDED;
