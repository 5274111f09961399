/**
 * The contracts around one ext_proc stream's phase machine (stream-handler.ts): the
 * transport it writes to (ProcessStream: the grpc-js call adapter, or a scripted fake in
 * tests) and what it needs from the server-wide edge (StreamEnv, which EdgeContext provides).
 * Declared apart from both so that neither imports the other.
 */
import type { AdmissionService, RouteTicket, RoutingService } from '../core/routing-service.js';
import type { LogFields, Logger } from '../logging/logger.js';
import type { Clock } from '../util/clock.js';
import type { CompletionMode } from './completion-mode.js';
import type { EdgeStats } from './edge-stats.js';
import type { BodySendMode, ProcessingResponse } from './ext-proc-proto.js';
import type { InferenceMatcher } from './inference-request-rules.js';
import type { RequestMapping } from './request-mapping.js';

/** The transport side of one stream. */
export interface ProcessStream {
  /** First value of a gRPC request metadata key (e.g. `traceparent`). */
  metadataValue(key: string): string | undefined;
  write(message: ProcessingResponse): void;
  /** End the call with status OK. */
  end(): void;
  /** End the call with a non-OK gRPC status. */
  fail(code: number, details: string): void;
}

export interface StreamIdleTimeouts {
  /** Longest silence before the request side was answered (headers, body upload, trailers). */
  readonly requestMs: number;
  /** Longest silence after it (waiting for response headers, between response chunks). */
  readonly responseMs: number;
}

/** An open stream as the idle sweep sees it. */
export interface OpenStream {
  /** Router-clock time of the last message (or of the stream's opening). */
  readonly lastActivityMs: number;
  /** How long the stream may stay silent in its phase; undefined = no limit now. */
  idleLimitMs(idle: StreamIdleTimeouts): number | undefined;
  /** The idle timeout fired: release everything and end the stream. */
  expire(idleMs: number): void;
}

/** What a stream needs from the server-wide edge. */
export interface StreamEnv {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stats: EdgeStats;
  readonly routing: RoutingService;
  readonly admission: AdmissionService | undefined;
  readonly matcher: InferenceMatcher;
  readonly mapping: RequestMapping;
  readonly completion: CompletionMode;
  readonly assumedBodyMode: BodySendMode;
  readonly newRequestId: () => string;
  /** Add `x-cacheroute-decision` (the decision summary) to the response. */
  readonly decisionHeader: boolean;
  /** The decision summary (x-cacheroute-decision) of a ticket. */
  summaryOf(ticket: RouteTicket): string;
  /** Writes a log line unless its cause is over the rate limit. */
  limitedLog(logger: Logger, level: 'debug' | 'info' | 'warn' | 'error', cause: string, msg: string, fields: LogFields): void;
  /** A body mode that gives no body before the headers are released is in use (warned once). */
  headerOnlyRouting(bodyMode: BodySendMode): void;
  /** The stream ended. */
  closed(stream: OpenStream): void;
}
