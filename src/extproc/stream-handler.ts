/**
 * The per-stream state machine of the ext_proc edge: one instance per gRPC stream, i.e. per
 * downstream HTTP request. It turns Envoy's messages into one routing decision and answers
 * every message exactly once, in order, as Envoy's conversation rules demand (an extra,
 * missing or out-of-order answer is "spurious" and fails the HTTP request).
 *
 * Why the shape: Envoy's rules depend on the body mode. In FULL_DUPLEX_STREAMED (what the
 * endpoint-picker protocol requires) the body arrives before we answer the headers, so we
 * hold the headers answer until the body ends, then send it with the decision and give
 * every body chunk back. In BUFFERED the body only arrives after the headers answer, so the
 * decision travels in the body answer instead (Envoy still holds the headers then). The
 * handler is synchronous and transport-agnostic (it writes to a ProcessStream), so tests can
 * drive it message by message without gRPC, timers or sleeps.
 *
 * Accounting: a RouteTicket is taken only when a decision was made and is finished exactly
 * once — when the response completes, or when the stream ends in any other way (Envoy's
 * CANCELLED at the end of every request, client disconnect, transport error, our own
 * protocol error, or the idle timeout below). No path leaves a request counted as in flight.
 * With `pending` (the response path is Envoy's access log, not this stream) the ticket is
 * handed over at the decision instead: its key rides in the decision metadata, the access
 * log entry finishes it, and this stream's ending no longer does (unless the stream itself
 * saw the whole response).
 *
 * Admission: with an AdmissionService the decision may be held (phase `admitting`) until an
 * engine has room; the headers (or body) answer goes out when it is admitted, a 429 when it
 * is refused, nothing when the stream ended meanwhile (the held request is withdrawn).
 *
 * Stream hygiene: a stream that sees no message for the idle timeout of its phase (before
 * the decision: `requestMs`; after it: `responseMs`, which must outlast the quietest
 * legitimate response) is expired by EdgeContext.sweepIdle — its ticket finished as aborted
 * and the stream failed with DEADLINE_EXCEEDED — so an abandoned stream cannot stay counted
 * in flight. Log lines about bad streams are rate-limited per cause (rate-limited-log.ts).
 */
import { randomUUID } from 'node:crypto';
import { RouterError } from '../core/errors.js';
import type { PromptInput, RouteRequest } from '../core/types.js';
import type { AdmissionService, RouteTicket, RoutingService } from '../core/routing-service.js';
import type { RequestsConfig } from '../config/types.js';
import type { Clock } from '../util/clock.js';
import { requestLogger } from '../logging/logger.js';
import type { LogFields, Logger } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { DECISION_HEADER, formatDecisionSummary } from '../telemetry/decision-summary.js';
import type { EdgeStats } from './edge-stats.js';
import { noopEdgeStats } from './edge-stats.js';
import { IDLE_TIMEOUT_GRPC_STATUS, grpcStatusOf, httpStatusOf } from './error-status.js';
import type { BodySendMode, ProcessingRequest__Output, ProcessingResponse } from './ext-proc-proto.js';
import { readHeaderMap } from './header-map.js';
import type { HeaderLookup } from './header-map.js';
import { InferenceMatcher, checkInferenceHeaders } from './inference-request-rules.js';
import { readServedEndpoint, readSubsetHint } from './lb-metadata.js';
import type { DecisionExtras } from './response-builders.js';
import {
  DESTINATION_HEADER,
  continueRequestBody,
  continueRequestHeaders,
  continueRequestTrailers,
  continueResponseBody,
  continueResponseHeaders,
  continueResponseTrailers,
  immediateErrorResponse,
  requestBodyWithDecision,
  requestHeadersWithDecision,
  setHeader,
  streamedRequestBody,
  streamedResponseBody,
} from './response-builders.js';
import { UsageSniffer } from './usage-sniffer.js';
import type { PendingResponses } from './pending-responses.js';

/** What the prompt extractor (src/request/extract-prompt.ts) returns. */
export interface PromptInfo {
  readonly kind: 'chat' | 'completion';
  readonly model: string;
  readonly prefix: string;
  readonly promptChars: number;
  readonly promptTokens: number;
  readonly maxTokens?: number;
  readonly stream: boolean;
  readonly input?: PromptInput;
}

/** Signature of src/request/extract-prompt.ts `extractPrompt`; throws RouterError BAD_REQUEST. */
export type PromptExtractor = (path: string, body: Uint8Array, opts: { maxPrefixChars: number; charsPerToken: number }) => PromptInfo;

/** The transport side of one stream (grpc-js call adapter, or a scripted fake in tests). */
export interface ProcessStream {
  /** First value of a gRPC request metadata key (e.g. `traceparent`). */
  metadataValue(key: string): string | undefined;
  write(message: ProcessingResponse): void;
  /** End the call with status OK. */
  end(): void;
  /** End the call with a non-OK gRPC status. */
  fail(code: number, details: string): void;
}

export interface EdgeOptions {
  readonly routing: RoutingService;
  readonly extract: PromptExtractor;
  readonly requests: RequestsConfig;
  /** Add `x-cacheroute-decision` to the response headers (config telemetry.decisionHeader). */
  readonly decisionHeader: boolean;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stats?: EdgeStats;
  /**
   * Body mode assumed when Envoy sends no `protocol_config` (Envoy < 1.34). The modes are
   * indistinguishable from what arrives, so this must match the Envoy config.
   */
  readonly assumedBodyMode?: BodySendMode;
  readonly newRequestId?: () => string;
  /** Admission control in front of `routing` (absent: every request is routed at once). */
  readonly admission?: AdmissionService;
  /** Request header naming the tenant (admission fairness); lower-case or any case. */
  readonly tenantHeader?: string;
  /** Request header carrying an integer priority (higher first); absent or invalid = 0. */
  readonly priorityHeader?: string;
  /** Idle timeouts; absent = streams never expire. */
  readonly idle?: StreamIdleTimeouts;
  /** Rate limiter for per-cause log lines (default: 5 lines per cause per 10 s). */
  readonly logLimiter?: RateLimitedLog;
  /** Hand routed tickets to this at the decision (response completion via Envoy's access log). */
  readonly pending?: PendingResponses;
  /** This router replica's id, appended to the decision summary as `replica=<id>`. */
  readonly replicaId?: string;
}

export interface StreamIdleTimeouts {
  /** Longest silence before the request side was answered (headers, body upload, trailers). */
  readonly requestMs: number;
  /** Longest silence after it (waiting for response headers, between response chunks). */
  readonly responseMs: number;
}

/** Highest |priority| accepted from the priority header; larger values are clamped. */
export const MAX_PRIORITY = 1000;

/** Everything prepared once per server and shared by its streams. */
export class EdgeContext {
  readonly matcher: InferenceMatcher;
  readonly stats: EdgeStats;
  readonly assumedBodyMode: BodySendMode;
  readonly newRequestId: () => string;
  readonly extractOpts: { maxPrefixChars: number; charsPerToken: number };
  readonly logLimiter: RateLimitedLog;
  readonly tenantHeader: string | undefined;
  readonly priorityHeader: string | undefined;
  private readonly replicaSuffix: string;
  /** Set once a degraded (header-only) body mode was logged. */
  warnedHeaderOnly = false;
  /** Open streams (for the idle sweep). */
  private readonly open_ = new Set<StreamHandler>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private expiredCount = 0;

  constructor(readonly options: EdgeOptions) {
    this.matcher = new InferenceMatcher(options.requests);
    this.stats = options.stats ?? noopEdgeStats;
    this.assumedBodyMode = options.assumedBodyMode ?? 'FULL_DUPLEX_STREAMED';
    this.newRequestId = options.newRequestId ?? randomUUID;
    this.extractOpts = { maxPrefixChars: options.requests.maxPrefixChars, charsPerToken: options.requests.charsPerToken };
    this.logLimiter = options.logLimiter ?? new RateLimitedLog({ clock: options.clock });
    this.tenantHeader = options.tenantHeader?.toLowerCase();
    this.priorityHeader = options.priorityHeader?.toLowerCase();
    this.replicaSuffix =
      options.replicaId !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(options.replicaId) ? `;replica=${options.replicaId}` : '';
  }

  /** The decision summary (x-cacheroute-decision), with this replica's id when known. */
  summaryOf(ticket: RouteTicket): string {
    const s = formatDecisionSummary(ticket.decision);
    return this.replicaSuffix === '' ? s : s + this.replicaSuffix;
  }

  open(stream: ProcessStream): StreamHandler {
    const h = new StreamHandler(this, stream);
    this.open_.add(h);
    return h;
  }

  /** Streams opened and not yet closed. */
  get openStreams(): number {
    return this.open_.size;
  }

  /** Streams expired by the idle timeout so far. */
  get expiredStreams(): number {
    return this.expiredCount;
  }

  /** Arms the idle sweep (a no-op without idle timeouts). Idempotent. */
  start(): void {
    const idle = this.options.idle;
    if (idle === undefined || this.sweepTimer !== undefined) return;
    const everyMs = Math.min(5_000, Math.max(50, Math.min(idle.requestMs, idle.responseMs) / 4));
    this.sweepTimer = setInterval(() => this.sweepIdle(), everyMs);
    this.sweepTimer.unref();
  }

  /** Stops the idle sweep and writes a summary of log lines the rate limit dropped. */
  stop(): void {
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    const dropped = this.logLimiter.drainSuppressed();
    const causes = Object.keys(dropped);
    if (causes.length > 0) {
      const fields: LogFields = {};
      for (const c of causes) fields[c] = dropped[c]!;
      this.options.logger.info('log lines suppressed by the rate limit, by cause', fields);
    }
  }

  /** Expires every stream idle longer than its phase allows. Returns how many. */
  sweepIdle(nowMs: number = this.options.clock.nowMs()): number {
    const idle = this.options.idle;
    if (idle === undefined) return 0;
    let expired = 0;
    for (const h of [...this.open_]) {
      const limit = h.idleLimitMs(idle);
      if (limit !== undefined && nowMs - h.lastActivityMs > limit) {
        h.expire(nowMs - h.lastActivityMs);
        expired++;
      }
    }
    this.expiredCount += expired;
    return expired;
  }

  /** A stream ended (StreamHandler.finalize). */
  closed(h: StreamHandler): void {
    this.open_.delete(h);
  }

  /** Writes a log line unless its cause is over the rate limit. */
  limitedLog(logger: Logger, level: 'debug' | 'info' | 'warn' | 'error', cause: string, msg: string, fields: LogFields): void {
    if (!logger.enabled(level)) return;
    this.logLimiter.log(cause, (extra) => logger[level](msg, { ...fields, ...extra }));
  }
}

export type StreamPhase =
  /** Waiting for the request headers. */
  | 'headers'
  /** Inference request, FULL_DUPLEX_STREAMED: collecting the body, headers answer held. */
  | 'collecting-body'
  /** Inference request, BUFFERED: headers answered, waiting for the one body message. */
  | 'awaiting-buffered-body'
  /** Inference request held by admission control; the request-side answer is pending. */
  | 'admitting'
  /** Request side answered (decision or pass-through); answering whatever follows. */
  | 'forwarded'
  /** A local reply was sent; Envoy stops processing, later messages are ignored. */
  | 'rejected'
  /** Stream over (half-close, cancel, transport error, or ended by us). */
  | 'closed';

const HEADER_ONLY_PROMPT: PromptInfo = { kind: 'completion', model: '', prefix: '', promptChars: 0, promptTokens: 0, stream: false };

export class StreamHandler {
  private phase: StreamPhase = 'headers';
  /** Observability mode: Envoy ignores replies, so we send none. */
  private passive = false;
  private requestBodyMode: BodySendMode;
  private responseBodyMode: BodySendMode;
  private requestEnded = false;
  private responseEnded = false;

  // Request facts (inference requests only).
  private method = '';
  private path = '';
  private headers: HeaderLookup | undefined;
  private requestId = '';
  private arrivalMs = 0;
  private subset: string[] | undefined;
  private traceparent: string | undefined;
  private tracestate: string | undefined;
  private chunks: Buffer[] = [];
  private bodyBytes = 0;
  private log: Logger | undefined;

  // Routed request.
  private ticket: RouteTicket | undefined;
  private ticketFinished = false;
  /** Key of the ticket handed to EdgeOptions.pending (then the access log finishes it). */
  private ticketKey: string | undefined;
  private decisionExtras: DecisionExtras | undefined;
  private responseStatus: number | undefined;
  private responseHeadersSeen = false;
  private responseBodySeen = false;
  private servedBy: string | undefined;
  private sniffer: UsageSniffer | undefined;
  private firstByteReported = false;
  /** Withdraws a request held by admission control when the stream ends. */
  private admitAbort: AbortController | undefined;
  /** Router-clock time of the last message (or of the stream's opening). */
  lastActivityMs: number;

  constructor(
    private readonly ctx: EdgeContext,
    private readonly stream: ProcessStream,
  ) {
    this.requestBodyMode = ctx.assumedBodyMode;
    this.responseBodyMode = ctx.assumedBodyMode;
    this.lastActivityMs = ctx.options.clock.nowMs();
    ctx.stats.streamOpened();
  }

  /** How long this stream may stay silent in its phase; undefined = no limit now. */
  idleLimitMs(idle: StreamIdleTimeouts): number | undefined {
    switch (this.phase) {
      case 'closed':
      case 'admitting': // admission control bounds this wait with its own deadline
        return undefined;
      case 'forwarded':
        return idle.responseMs;
      default:
        return idle.requestMs;
    }
  }

  /** The idle timeout fired: release everything and end the stream with DEADLINE_EXCEEDED. */
  expire(idleMs: number): void {
    if (this.phase === 'closed') return;
    const phase = this.phase;
    this.ctx.stats.streamError('IDLE');
    this.ctx.limitedLog(this.logger(), 'info', 'idle-timeout', 'ext_proc stream expired idle', { phase, idle_ms: Math.round(idleMs) });
    this.finalize();
    this.stream.fail(IDLE_TIMEOUT_GRPC_STATUS, `no message for ${Math.round(idleMs)} ms (${phase})`);
  }

  get state(): StreamPhase {
    return this.phase;
  }

  /** The routed request's ticket, if a decision was made (tests, diagnostics). */
  get routed(): RouteTicket | undefined {
    return this.ticket;
  }

  /** One ProcessingRequest from Envoy. Never throws. */
  onMessage(msg: ProcessingRequest__Output): void {
    if (this.phase === 'closed' || this.phase === 'rejected') return;
    this.lastActivityMs = this.ctx.options.clock.nowMs();
    try {
      this.dispatch(msg);
    } catch (err) {
      const e = RouterError.from(err);
      this.endWithError(e.code === 'PROTOCOL' ? e : new RouterError('INTERNAL', e.message));
    }
  }

  /** Envoy half-closed its side (graceful close): finish and end ours with OK. */
  onHalfClose(): void {
    if (this.phase === 'closed') return;
    this.finalize();
    this.stream.end();
  }

  /** The stream was cancelled/reset (Envoy does this at the end of every request). */
  onCancel(): void {
    this.finalize();
  }

  /** A transport-level error on the stream. */
  onTransportError(err: unknown): void {
    if (this.phase === 'closed') return;
    this.ctx.stats.streamError('TRANSPORT');
    this.ctx.limitedLog(this.logger(), 'debug', 'transport', 'ext_proc stream error', {
      error: err instanceof Error ? err.message : String(err),
    });
    this.finalize();
  }

  // ---------------------------------------------------------------------------------------

  private dispatch(msg: ProcessingRequest__Output): void {
    if (this.phase === 'headers') this.readProtocolConfig(msg);
    if (this.passive) return;
    switch (msg.request) {
      case 'request_headers':
        return this.onRequestHeaders(msg);
      case 'request_body':
        return this.onRequestBody(msg);
      case 'request_trailers':
        return this.onRequestTrailers();
      case 'response_headers':
        return this.onResponseHeaders(msg);
      case 'response_body':
        return this.onResponseBody(msg);
      case 'response_trailers':
        return this.onResponseTrailers();
      default:
        throw protocolError('ProcessingRequest without a request/response part');
    }
  }

  private readProtocolConfig(msg: ProcessingRequest__Output): void {
    if (msg.observability_mode) this.passive = true;
    const pc = msg.protocol_config;
    if (pc) {
      this.requestBodyMode = pc.request_body_mode;
      this.responseBodyMode = pc.response_body_mode;
    }
  }

  private onRequestHeaders(msg: ProcessingRequest__Output): void {
    if (this.phase !== 'headers') throw protocolError('request headers received twice');
    const part = msg.request_headers!;
    const headers = readHeaderMap(part.headers);
    const endOfStream = part.end_of_stream;
    if (endOfStream) this.requestEnded = true;
    const method = headers.get(':method') ?? '';
    const path = headers.get(':path') ?? '';

    if (!this.ctx.matcher.matches(method, path)) {
      // Pass-through. Only a client-forged destination header is removed.
      this.phase = 'forwarded';
      this.send(continueRequestHeaders(headers.has(DESTINATION_HEADER) ? [DESTINATION_HEADER] : []));
      return;
    }

    const opts = this.ctx.options;
    this.method = method;
    this.path = path;
    this.headers = headers;
    this.arrivalMs = opts.clock.nowMs();
    this.requestId = headers.get('x-request-id') || this.ctx.newRequestId();
    this.subset = readSubsetHint(msg.metadata_context);
    const grpcParent = this.stream.metadataValue('traceparent');
    if (grpcParent !== undefined && grpcParent !== '') {
      this.traceparent = grpcParent;
      this.tracestate = this.stream.metadataValue('tracestate');
    } else {
      this.traceparent = headers.get('traceparent');
      this.tracestate = headers.get('tracestate');
    }

    if (endOfStream) return this.reject(new RouterError('BAD_REQUEST', 'inference request has no body'));
    const refused = checkInferenceHeaders(headers, opts.requests.maxBodyBytes);
    if (refused) return this.reject(refused);

    switch (this.requestBodyMode) {
      case 'FULL_DUPLEX_STREAMED':
        this.phase = 'collecting-body';
        return;
      case 'BUFFERED':
      case 'BUFFERED_PARTIAL':
        this.phase = 'awaiting-buffered-body';
        this.send(continueRequestHeaders());
        return;
      default: {
        // NONE / STREAMED / GRPC: the body cannot inform the decision (STREAMED releases the
        // headers before any chunk arrives), so route on headers alone (load only).
        if (!this.ctx.warnedHeaderOnly) {
          this.ctx.warnedHeaderOnly = true;
          opts.logger.warn('request body mode gives the router no body before the headers are released; routing on load only', {
            body_mode: this.requestBodyMode,
          });
        }
        this.decide(undefined, (ticket) => {
          this.phase = 'forwarded';
          this.send(requestHeadersWithDecision(ticket.decision, this.decisionExtras));
          this.closeIfHandedOver();
        });
      }
    }
  }

  private onRequestBody(msg: ProcessingRequest__Output): void {
    if (this.phase === 'headers') throw protocolError('request body before request headers');
    if (this.phase === 'admitting') throw protocolError('request body while the request was held by admission control');
    if (this.requestEnded) throw protocolError('request body after the request ended');
    const part = msg.request_body!;
    const body = part.body;
    const endOfStream = part.end_of_stream;
    if (endOfStream) this.requestEnded = true;

    if (this.phase === 'collecting-body') {
      this.bodyBytes += body.length;
      if (this.bodyBytes > this.ctx.options.requests.maxBodyBytes) {
        return this.reject(tooLarge(this.ctx.options.requests.maxBodyBytes));
      }
      this.chunks.push(body);
      if (endOfStream) this.completeDuplexBody(true);
      return;
    }

    if (this.phase === 'awaiting-buffered-body') {
      if (this.requestBodyMode === 'BUFFERED_PARTIAL' && !endOfStream) {
        // Envoy sent only what fit in its buffer: the prompt is incomplete.
        return this.reject(tooLarge(this.ctx.options.requests.maxBodyBytes));
      }
      this.decide(body, (ticket) => {
        this.phase = 'forwarded';
        this.send(requestBodyWithDecision(ticket.decision, this.decisionExtras));
        this.closeIfHandedOver();
      });
      return;
    }

    // forwarded: pass-through or header-only routing.
    this.send(this.requestBodyMode === 'FULL_DUPLEX_STREAMED' ? streamedRequestBody(body, endOfStream) : continueRequestBody());
    this.closeIfHandedOver();
  }

  private onRequestTrailers(): void {
    if (this.phase === 'headers') throw protocolError('request trailers before request headers');
    if (this.requestEnded) throw protocolError('request trailers after the request ended');
    this.requestEnded = true;
    if (this.phase === 'collecting-body') {
      this.completeDuplexBody(false);
      return;
    }
    if (this.phase === 'awaiting-buffered-body') {
      // Trailers without a body message: nothing to route on.
      return this.reject(new RouterError('BAD_REQUEST', 'request body is empty'));
    }
    this.send(continueRequestTrailers());
    this.closeIfHandedOver();
  }

  /**
   * FULL_DUPLEX_STREAMED: the body is complete (end_of_stream, or trailers follow). Decide,
   * then send the held headers answer, the body back, and the trailers answer. The body goes
   * back in as few messages as ECHO_MESSAGE_BYTES allows (FULL_DUPLEX_STREAMED lets the
   * processor re-chunk): Envoy usually sends a request as its data plus an empty
   * end_of_stream chunk, and every further message costs a write on each side before the
   * engine has the whole request.
   */
  private completeDuplexBody(endedByBody: boolean): void {
    const chunks = this.chunks;
    this.chunks = [];
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.bodyBytes);
    this.decide(body, (ticket) => {
      this.phase = 'forwarded';
      this.send(requestHeadersWithDecision(ticket.decision, this.decisionExtras));
      const pieces =
        body.length <= ECHO_MESSAGE_BYTES
          ? [body]
          : joinBodyChunks(
              body,
              chunks.map((c) => c.length),
              ECHO_MESSAGE_BYTES,
            );
      for (let i = 0; i < pieces.length; i++) {
        this.send(streamedRequestBody(pieces[i]!, endedByBody && i === pieces.length - 1));
      }
      if (!endedByBody) this.send(continueRequestTrailers());
      this.closeIfHandedOver();
    });
  }

  /**
   * Access-log completion: once the whole request side is answered nothing more is needed
   * from this stream, so we end it with OK (Envoy then stops consulting the router for this
   * request). Why: Envoy otherwise keeps the stream until the engine's response headers, and
   * a router that dies in that window fails the request (a FULL_DUPLEX_STREAMED body rules
   * out fail-open); after an OK close nothing the router does can touch the request.
   */
  private closeIfHandedOver(): void {
    if (this.ticketKey === undefined || !this.requestEnded || this.phase !== 'forwarded') return;
    this.finalize();
    this.stream.end();
  }

  private onResponseHeaders(msg: ProcessingRequest__Output): void {
    this.checkResponseAllowed('response headers');
    if (this.responseHeadersSeen || this.responseBodySeen) throw protocolError('response headers after response headers or body');
    const part = msg.response_headers!;
    this.responseHeadersSeen = true;
    const headers = readHeaderMap(part.headers);
    const status = Number(headers.get(':status'));
    if (Number.isInteger(status) && status > 0) this.responseStatus = status;
    this.noteServed(msg);
    const ticket = this.ticket;
    if (ticket !== undefined && this.ctx.options.decisionHeader) {
      this.send(continueResponseHeaders([setHeader(DECISION_HEADER, this.decisionExtras?.summary ?? this.ctx.summaryOf(ticket))]));
    } else {
      this.send(continueResponseHeaders());
    }
    if (part.end_of_stream) this.responseComplete();
  }

  private onResponseBody(msg: ProcessingRequest__Output): void {
    this.checkResponseAllowed('response body');
    const part = msg.response_body!;
    this.responseBodySeen = true;
    this.noteServed(msg);
    if (this.ticket !== undefined) {
      this.sniffer ??= new UsageSniffer();
      this.sniffer.push(part.body);
      // The first response byte (for SSE: the first token) ends the request's prefill in the
      // core's accounting; response headers do not, engines send them before the first token.
      if (!this.firstByteReported && part.body.length > 0) {
        this.firstByteReported = true;
        this.ticket.firstByte?.();
      }
    }
    this.send(
      this.responseBodyMode === 'FULL_DUPLEX_STREAMED' ? streamedResponseBody(part.body, part.end_of_stream) : continueResponseBody(),
    );
    if (part.end_of_stream) this.responseComplete();
  }

  private onResponseTrailers(): void {
    this.checkResponseAllowed('response trailers');
    this.send(continueResponseTrailers());
    this.responseComplete();
  }

  private checkResponseAllowed(what: string): void {
    if (this.phase === 'admitting') throw protocolError(`${what} while the request was held by admission control`);
    if (this.phase !== 'forwarded') throw protocolError(`${what} before the request was answered`);
    if (this.responseEnded) throw protocolError(`${what} after the response ended`);
  }

  private noteServed(msg: ProcessingRequest__Output): void {
    if (this.ticket !== undefined && this.servedBy === undefined) this.servedBy = readServedEndpoint(msg.metadata_context);
  }

  private responseComplete(): void {
    this.responseEnded = true;
    this.finishTicket(false);
  }

  // ---------------------------------------------------------------------------------------

  /**
   * Extracts the prompt and asks for a decision (through admission control when configured);
   * `then` sends the request-side answer once there is a ticket — at once, or when a held
   * request is admitted. On failure answers with a local reply.
   */
  private decide(body: Buffer | undefined, then: (ticket: RouteTicket) => void): void {
    const opts = this.ctx.options;
    let request: RouteRequest;
    let result: RouteTicket | Promise<RouteTicket>;
    try {
      request = this.buildRequest(body);
      if (opts.admission !== undefined) {
        this.admitAbort = new AbortController();
        result = opts.admission.admit(request, this.admitAbort.signal);
      } else {
        result = opts.routing.route(request);
      }
    } catch (err) {
      this.reject(RouterError.from(err));
      return;
    } finally {
      this.headers = undefined;
    }
    if (!(result instanceof Promise)) {
      this.accept(result, then);
      return;
    }
    this.phase = 'admitting';
    result.then(
      (ticket) => {
        // The stream ended while the request was held: nothing to answer, give the slot back.
        if (this.phase !== 'admitting') return ticket.finish({ aborted: true });
        this.accept(ticket, then);
      },
      (err: unknown) => {
        if (this.phase === 'admitting') this.reject(RouterError.from(err));
      },
    );
  }

  private accept(ticket: RouteTicket, then: (ticket: RouteTicket) => void): void {
    this.ticket = ticket;
    this.admitAbort = undefined;
    const opts = this.ctx.options;
    if (opts.pending !== undefined) this.ticketKey = opts.pending.hold(ticket);
    if (this.ticketKey !== undefined || opts.decisionHeader) {
      this.decisionExtras = {
        ...(this.ticketKey !== undefined ? { ticket: this.ticketKey } : {}),
        ...(opts.decisionHeader ? { summary: this.ctx.summaryOf(ticket) } : {}),
      };
    }
    if (opts.logger.enabled('debug')) {
      const d = ticket.decision;
      this.logger().debug('routed', {
        endpoint: d.endpoint.id,
        fallbacks: d.fallbacks.length,
        strategy: d.strategy,
        reason: d.reason,
        matched_blocks: d.matchedBlocks,
        total_blocks: d.totalBlocks,
        decision_us: d.decisionMicros,
      });
    }
    try {
      then(ticket);
    } catch (err) {
      this.endWithError(new RouterError('INTERNAL', RouterError.from(err).message));
    }
  }

  /** The core's view of this request. @throws RouterError for a body that cannot be routed. */
  private buildRequest(body: Buffer | undefined): RouteRequest {
    const opts = this.ctx.options;
    let prompt = HEADER_ONLY_PROMPT;
    if (body !== undefined) {
      if (body.length === 0) throw new RouterError('BAD_REQUEST', 'request body is empty');
      if (body.length > opts.requests.maxBodyBytes) throw tooLarge(opts.requests.maxBodyBytes);
      prompt = opts.extract(this.path, body, this.ctx.extractOpts);
    }
    if (this.subset !== undefined && this.subset.length === 0) {
      throw new RouterError('NO_ENDPOINT', 'the subset hint names no endpoints');
    }
    const sessionHeader = opts.requests.sessionHeader;
    const tenant = this.ctx.tenantHeader !== undefined ? this.headers?.get(this.ctx.tenantHeader) : undefined;
    const priority = this.ctx.priorityHeader !== undefined ? parsePriority(this.headers?.get(this.ctx.priorityHeader)) : undefined;
    return {
      requestId: this.requestId,
      model: prompt.model,
      prefix: prompt.prefix,
      promptChars: prompt.promptChars,
      promptTokens: prompt.promptTokens,
      maxTokens: prompt.maxTokens,
      sessionKey: sessionHeader !== undefined ? this.headers?.get(sessionHeader.toLowerCase()) : undefined,
      subset: this.subset,
      stream: prompt.stream,
      ...(tenant !== undefined && tenant !== '' ? { tenant } : {}),
      ...(priority !== undefined ? { priority } : {}),
      ...(prompt.input !== undefined ? { promptInput: prompt.input } : {}),
      ...(this.headers !== undefined ? { headers: this.headers } : {}),
      arrivalMs: this.arrivalMs,
      traceparent: this.traceparent,
      tracestate: this.tracestate,
    };
  }

  /** Sends a local reply for `err`; Envoy ends processing of this request. */
  private reject(err: RouterError): void {
    this.chunks = [];
    this.phase = 'rejected';
    this.ctx.stats.streamError(err.code);
    const status = httpStatusOf(err.code);
    const fields = { code: err.code, status, method: this.method, path: pathForLog(this.path), error: err.message };
    this.ctx.limitedLog(this.logger(), status >= 500 ? 'warn' : 'info', `refused:${err.code}`, 'request refused', fields);
    this.send(immediateErrorResponse(err));
  }

  /** Ends the gRPC stream with an error status (protocol violations, internal faults). */
  private endWithError(err: RouterError): void {
    if (this.phase === 'closed') return;
    this.ctx.stats.streamError(err.code);
    const what = err.code === 'PROTOCOL' ? 'ext_proc protocol violation' : 'ext_proc handler failure';
    this.ctx.limitedLog(this.logger(), err.code === 'PROTOCOL' ? 'warn' : 'error', `stream:${err.code}`, what, {
      code: err.code,
      error: err.message,
    });
    this.finalize();
    this.stream.fail(grpcStatusOf(err.code), err.message);
  }

  private send(message: ProcessingResponse): void {
    if (this.phase === 'closed') return;
    this.stream.write(message);
  }

  private finishTicket(aborted: boolean): void {
    const ticket = this.ticket;
    if (ticket === undefined || this.ticketFinished) return;
    const key = this.ticketKey;
    // Handed over: only a response this stream saw complete ends it here; every other ending
    // is reported by the access log entry (which also covers aborts and resets).
    if (key !== undefined && aborted) return;
    this.ticketFinished = true;
    const usage = this.sniffer?.result();
    this.sniffer = undefined;
    const outcome = {
      aborted,
      status: this.responseStatus,
      promptTokens: usage?.promptTokens,
      cachedTokens: usage?.cachedTokens,
      completionTokens: usage?.completionTokens,
      servedBy: this.servedBy,
    };
    if (key !== undefined) {
      this.ctx.options.pending!.complete(key, outcome);
      return;
    }
    if (aborted) this.ctx.stats.streamError('ABORTED');
    ticket.finish(outcome);
  }

  /** Releases everything; the stream is over. Idempotent. */
  private finalize(): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.ctx.closed(this);
    // A request still held by admission control is withdrawn (it was never routed).
    this.admitAbort?.abort();
    this.admitAbort = undefined;
    this.chunks = [];
    this.headers = undefined;
    // Without response body messages (body mode NONE) seeing the response headers is the
    // most we can know; treat that as a completed response.
    const completeEnough =
      this.responseEnded || (this.ticketKey === undefined && this.responseHeadersSeen && this.responseBodyMode === 'NONE');
    this.finishTicket(!completeEnough);
    this.ctx.stats.streamClosed();
  }

  private logger(): Logger {
    if (this.requestId === '') return this.ctx.options.logger;
    this.log ??= requestLogger(this.ctx.options.logger, { requestId: this.requestId, traceparent: this.traceparent });
    return this.log;
  }
}

/**
 * Largest body echo message built by joining Envoy's chunks (a chunk Envoy sent larger than
 * this goes back as it came, never split). A typical inference request fits in one; large
 * bodies still go back in pieces, as Envoy has refused single body responses of ~128 KB
 * (gateway-api-inference-extension issue 854, whose picker keeps them under 62,000 bytes).
 */
export const ECHO_MESSAGE_BYTES = 60 * 1024;

/**
 * Cuts the joined body back into pieces of at most `limit` bytes along the boundaries of the
 * chunks it came in (`chunkLengths`, in order), as views of `body` (no copy); empty chunks
 * add nothing, and a chunk longer than `limit` stays a piece of its own. An empty body gives
 * one empty piece (the end_of_stream message still has to go back).
 */
export function joinBodyChunks(body: Buffer, chunkLengths: readonly number[], limit: number): Buffer[] {
  const pieces: Buffer[] = [];
  let start = 0;
  let end = 0;
  for (const n of chunkLengths) {
    if (n === 0) continue;
    if (end - start + n > limit && end > start) {
      pieces.push(body.subarray(start, end));
      start = end;
    }
    end += n;
  }
  if (end > start) pieces.push(body.subarray(start, end));
  return pieces.length > 0 ? pieces : [body.subarray(0, 0)];
}

/** The priority header's value: an integer clamped to ±MAX_PRIORITY; anything else is 0. */
export function parsePriority(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = value.trim();
  if (!/^[+-]?[0-9]{1,9}$/.test(t)) return 0;
  return Math.max(-MAX_PRIORITY, Math.min(MAX_PRIORITY, Number(t)));
}

function protocolError(message: string): RouterError {
  return new RouterError('PROTOCOL', message);
}

function tooLarge(limit: number): RouterError {
  return new RouterError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
}

/** The path without its query string (queries may carry user data). */
function pathForLog(path: string): string {
  const q = path.indexOf('?');
  return q >= 0 ? path.slice(0, q) : path;
}
