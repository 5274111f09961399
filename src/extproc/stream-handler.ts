/**
 * The per-stream phase machine of the ext_proc edge: one instance per gRPC stream, i.e. per
 * downstream HTTP request. It turns Envoy's messages into one routing decision and answers
 * every message exactly once, in order, as Envoy's conversation rules demand (an extra,
 * missing or out-of-order answer is "spurious" and fails the HTTP request).
 *
 * Why the shape: Envoy's rules depend on the body mode. In FULL_DUPLEX_STREAMED (what the
 * endpoint-picker protocol requires) the body arrives before we answer the headers, so we
 * hold the headers answer until the body ends, then send it with the decision and give
 * every body chunk back. In BUFFERED the body only arrives after the headers answer, so the
 * decision travels in the body answer instead. The handler is synchronous and
 * transport-agnostic (it writes to a ProcessStream), so tests drive it message by message.
 *
 * Delegated: mapping the request (request-mapping.ts), body joining (body-chunks.ts), getting
 * the ticket through admission control (ticket-request.ts), what was seen of the response
 * (response-record.ts), what its end means for the ticket (completion-mode.ts), the phases and
 * their idle limits (stream-phase.ts), and the server-wide context (edge-context.ts: idle sweep,
 * rate-limited logs).
 *
 * Accounting: the completion hears exactly once how the response ended — when it completes,
 * or when the stream ends in any other way (Envoy's CANCELLED at the end of every request,
 * client disconnect, transport error, our own protocol error, the idle timeout). When the
 * mode needs nothing after the request side (access-log completion), the stream is ended with
 * OK right then: Envoy otherwise keeps it until the engine's response headers, and a router
 * dying in that window fails the request (a FULL_DUPLEX_STREAMED body rules out fail-open).
 */
import { RouterError } from '../core/errors.js';
import type { RouteTicket } from '../core/routing-service.js';
import { requestLogger, type Logger } from '../logging/logger.js';
import { DECISION_HEADER } from './decision-header.js';
import { BodyCollector } from './body-chunks.js';
import type { TicketCompletion } from './completion-mode.js';
import { IDLE_TIMEOUT_GRPC_STATUS, grpcStatusOf, httpStatusOf } from './error-status.js';
import type { BodySendMode, ProcessingRequest__Output, ProcessingResponse } from './ext-proc-proto.js';
import { readHeaderMap, type HeaderLookup } from './header-map.js';
import { checkInferenceHeaders } from './inference-request-rules.js';
import { bodyTooLarge, pathForLog, readRequestFacts, toRouteRequest, type RequestFacts } from './request-mapping.js';
import { ResponseRecord } from './response-record.js';
import { HeldRequest, requestTicket, routedLogFields } from './ticket-request.js';
import * as answer from './response-builders.js';
import type { OpenStream, ProcessStream, StreamEnv, StreamIdleTimeouts } from './stream-env.js';
import { phaseIdleLimitMs, type StreamPhase } from './stream-phase.js';

export type { StreamPhase } from './stream-phase.js';

export class StreamHandler implements OpenStream {
  private phase: StreamPhase = 'headers';
  /** Observability mode: Envoy ignores replies, so we send none. */
  private passive = false;
  private requestBodyMode: BodySendMode;
  private responseBodyMode: BodySendMode;
  private requestEnded = false;

  // Inference requests only.
  private method = '';
  private facts: RequestFacts | undefined;
  /** Dropped once the request is mapped. */
  private headers: HeaderLookup | undefined;
  /** The client sent x-prefiller-host-port (removed unless the decision sets it). */
  private clientPrefiller = false;
  private body: BodyCollector | undefined;
  private log: Logger | undefined;

  // Routed request.
  private ticket: RouteTicket | undefined;
  private completion: TicketCompletion | undefined;
  /** The completion was told how the response ended. */
  private completionEnded = false;
  private decisionExtras: answer.DecisionExtras | undefined;
  private readonly response = new ResponseRecord();
  /** A request admission control holds (withdrawn when the stream ends). */
  private held: HeldRequest | undefined;
  /** Router-clock time of the last message (or of the stream's opening). */
  lastActivityMs: number;

  constructor(
    private readonly env: StreamEnv,
    private readonly stream: ProcessStream,
  ) {
    this.requestBodyMode = env.assumedBodyMode;
    this.responseBodyMode = env.assumedBodyMode;
    this.lastActivityMs = env.clock.nowMs();
    env.stats.streamOpened();
  }

  /** How long this stream may stay silent in its phase; undefined = no limit now. */
  idleLimitMs(idle: StreamIdleTimeouts): number | undefined {
    return phaseIdleLimitMs(this.phase, idle);
  }

  /** The idle timeout fired: release everything and end the stream with DEADLINE_EXCEEDED. */
  expire(idleMs: number): void {
    if (this.phase === 'closed') return;
    const phase = this.phase;
    this.env.stats.streamError('IDLE');
    this.env.limitedLog(this.logger(), 'info', 'idle-timeout', 'ext_proc stream expired idle', { phase, idle_ms: Math.round(idleMs) });
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
    this.lastActivityMs = this.env.clock.nowMs();
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
    this.env.stats.streamError('TRANSPORT');
    this.env.limitedLog(this.logger(), 'debug', 'transport', 'ext_proc stream error', {
      error: err instanceof Error ? err.message : String(err),
    });
    this.finalize();
  }

  // ---------------------------------------------------------------------------------------

  private dispatch(msg: ProcessingRequest__Output): void {
    if (this.phase === 'headers') {
      if (msg.observability_mode) this.passive = true;
      const pc = msg.protocol_config;
      if (pc) {
        this.requestBodyMode = pc.request_body_mode;
        this.responseBodyMode = pc.response_body_mode;
      }
    }
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

  private onRequestHeaders(msg: ProcessingRequest__Output): void {
    if (this.phase !== 'headers') throw protocolError('request headers received twice');
    const part = msg.request_headers!;
    const headers = readHeaderMap(part.headers);
    const endOfStream = part.end_of_stream;
    if (endOfStream) this.requestEnded = true;
    const method = headers.get(':method') ?? '';
    if (!this.env.matcher.matches(method, headers.get(':path') ?? '')) {
      // Pass-through. Only client-forged routing headers (destination, prefiller) are removed.
      this.phase = 'forwarded';
      this.send(answer.continueRequestHeaders(answer.forgedRoutingHeaders((h) => headers.has(h))));
      return;
    }

    const env = this.env;
    this.method = method;
    this.headers = headers;
    this.clientPrefiller = headers.has(answer.PREFILLER_HEADER);
    this.facts = readRequestFacts(headers, msg.metadata_context, (k) => this.stream.metadataValue(k), env.clock.nowMs(), env.newRequestId);
    if (endOfStream) return this.reject(new RouterError('BAD_REQUEST', 'inference request has no body'));
    const refused = checkInferenceHeaders(headers, env.mapping.maxBodyBytes);
    if (refused) return this.reject(refused);

    switch (this.requestBodyMode) {
      case 'FULL_DUPLEX_STREAMED':
        this.phase = 'collecting-body';
        this.body = new BodyCollector(env.mapping.maxBodyBytes);
        return;
      case 'BUFFERED':
      case 'BUFFERED_PARTIAL':
        this.phase = 'awaiting-buffered-body';
        this.send(answer.continueRequestHeaders());
        return;
      default:
        // NONE / STREAMED / GRPC: the body cannot inform the decision (STREAMED releases the
        // headers before any chunk arrives), so route on headers alone (load only).
        env.headerOnlyRouting(this.requestBodyMode);
        this.decide(undefined, (ticket) => [answer.requestHeadersWithDecision(ticket.decision, this.decisionExtras)]);
    }
  }

  private onRequestBody(msg: ProcessingRequest__Output): void {
    if (this.phase === 'headers') throw protocolError('request body before request headers');
    if (this.phase === 'admitting') throw protocolError('request body while the request was held by admission control');
    if (this.requestEnded) throw protocolError('request body after the request ended');
    const part = msg.request_body!;
    const endOfStream = part.end_of_stream;
    if (endOfStream) this.requestEnded = true;

    if (this.phase === 'collecting-body') {
      if (!this.body!.push(part.body)) return this.reject(bodyTooLarge(this.env.mapping.maxBodyBytes));
      if (endOfStream) this.completeDuplexBody(true);
      return;
    }

    if (this.phase === 'awaiting-buffered-body') {
      if (this.requestBodyMode === 'BUFFERED_PARTIAL' && !endOfStream) {
        // Envoy sent only what fit in its buffer: the prompt is incomplete.
        return this.reject(bodyTooLarge(this.env.mapping.maxBodyBytes));
      }
      return this.decide(part.body, (ticket) => [answer.requestBodyWithDecision(ticket.decision, this.decisionExtras)]);
    }

    // forwarded: pass-through or header-only routing.
    this.send(
      this.requestBodyMode === 'FULL_DUPLEX_STREAMED' ? answer.streamedRequestBody(part.body, endOfStream) : answer.continueRequestBody(),
    );
    this.releaseIfDone();
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
    this.send(answer.continueRequestTrailers());
    this.releaseIfDone();
  }

  /**
   * FULL_DUPLEX_STREAMED: the body is complete (end_of_stream, or trailers follow). Decide,
   * then send the held headers answer, the body back (joined, body-chunks.ts), and the
   * trailers answer.
   */
  private completeDuplexBody(endedByBody: boolean): void {
    const { body, echo } = this.body!.take();
    this.decide(body, (ticket) => [
      answer.requestHeadersWithDecision(ticket.decision, this.decisionExtras),
      ...echo.map((piece, i) => answer.streamedRequestBody(piece, endedByBody && i === echo.length - 1)),
      ...(endedByBody ? [] : [answer.continueRequestTrailers()]),
    ]);
  }

  /** The whole request side is answered: end the stream with OK if the completion mode needs nothing more from it. */
  private releaseIfDone(): void {
    if (this.completion === undefined || !this.requestEnded || this.phase !== 'forwarded') return;
    if (!this.completion.releaseAfterRequest()) return;
    this.finalize();
    this.stream.end();
  }

  private onResponseHeaders(msg: ProcessingRequest__Output): void {
    this.checkResponseAllowed('response headers');
    if (this.response.started) throw protocolError('response headers after response headers or body');
    const part = msg.response_headers!;
    this.response.headers(readHeaderMap(part.headers).get(':status'), msg.metadata_context, this.ticket);
    const ticket = this.ticket;
    if (ticket !== undefined && this.env.decisionHeader) {
      this.send(
        answer.continueResponseHeaders([answer.setHeader(DECISION_HEADER, this.decisionExtras?.summary ?? this.env.summaryOf(ticket))]),
      );
    } else {
      this.send(answer.continueResponseHeaders());
    }
    if (part.end_of_stream) this.responseComplete();
  }

  private onResponseBody(msg: ProcessingRequest__Output): void {
    this.checkResponseAllowed('response body');
    const part = msg.response_body!;
    this.response.body(part.body, msg.metadata_context, this.ticket);
    this.send(
      this.responseBodyMode === 'FULL_DUPLEX_STREAMED'
        ? answer.streamedResponseBody(part.body, part.end_of_stream)
        : answer.continueResponseBody(),
    );
    if (part.end_of_stream) this.responseComplete();
  }

  private onResponseTrailers(): void {
    this.checkResponseAllowed('response trailers');
    this.send(answer.continueResponseTrailers());
    this.responseComplete();
  }

  private checkResponseAllowed(what: string): void {
    if (this.phase === 'admitting') throw protocolError(`${what} while the request was held by admission control`);
    if (this.phase !== 'forwarded') throw protocolError(`${what} before the request was answered`);
    if (this.response.ended) throw protocolError(`${what} after the response ended`);
  }

  private responseComplete(): void {
    this.response.complete();
    this.endCompletion();
  }

  // ---------------------------------------------------------------------------------------

  /**
   * Maps the request and asks for its ticket (ticket-request.ts); once there is one — at once,
   * or when a held request is admitted — sends the request-side answers `answers` builds. On
   * failure answers with a local reply.
   */
  private decide(body: Buffer | undefined, answers: (ticket: RouteTicket) => ProcessingResponse[]): void {
    let result: RouteTicket | HeldRequest;
    try {
      const request = toRouteRequest(this.facts!, this.headers!, body, this.env.mapping);
      result = requestTicket(this.env.routing, this.env.admission, request, {
        granted: (ticket) => this.accept(ticket, answers),
        refused: (err) => this.reject(RouterError.from(err)),
      });
    } catch (err) {
      this.reject(RouterError.from(err));
      return;
    } finally {
      this.headers = undefined;
    }
    if (result instanceof HeldRequest) {
      this.phase = 'admitting';
      this.held = result;
    } else {
      this.accept(result, answers);
    }
  }

  private accept(ticket: RouteTicket, answers: (ticket: RouteTicket) => ProcessingResponse[]): void {
    const env = this.env;
    this.ticket = ticket;
    this.held = undefined;
    this.completion = env.completion.begin(ticket, this.responseBodyMode !== 'NONE');
    const key = this.completion.key;
    const summary = env.decisionHeader ? env.summaryOf(ticket) : undefined;
    // A client-sent prefiller header is removed unless the decision sets its own.
    const strip = this.clientPrefiller;
    if (key !== undefined || summary !== undefined || strip) this.decisionExtras = answer.decisionExtras(key, summary, strip);
    if (env.logger.enabled('debug')) this.logger().debug('routed', routedLogFields(ticket.decision));
    try {
      const out = answers(ticket);
      this.phase = 'forwarded';
      for (const m of out) this.send(m);
      this.releaseIfDone();
    } catch (err) {
      this.endWithError(new RouterError('INTERNAL', RouterError.from(err).message));
    }
  }

  /** Sends a local reply for `err`; Envoy ends processing of this request. */
  private reject(err: RouterError): void {
    this.body?.clear();
    this.phase = 'rejected';
    this.env.stats.streamError(err.code);
    const status = httpStatusOf(err.code);
    const fields = { code: err.code, status, method: this.method, path: pathForLog(this.facts?.path ?? ''), error: err.message };
    this.env.limitedLog(this.logger(), status >= 500 ? 'warn' : 'info', `refused:${err.code}`, 'request refused', fields);
    this.send(answer.immediateErrorResponse(err));
  }

  /** Ends the gRPC stream with an error status (protocol violations, internal faults). */
  private endWithError(err: RouterError): void {
    if (this.phase === 'closed') return;
    this.env.stats.streamError(err.code);
    const what = err.code === 'PROTOCOL' ? 'ext_proc protocol violation' : 'ext_proc handler failure';
    this.env.limitedLog(this.logger(), err.code === 'PROTOCOL' ? 'warn' : 'error', `stream:${err.code}`, what, {
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

  /** Tells the completion how the response ended (once). */
  private endCompletion(): void {
    const completion = this.completion;
    if (completion === undefined || this.completionEnded) return;
    this.completionEnded = true;
    completion.end(this.response.end(this.responseBodyMode), this.response.facts());
  }

  /** Releases everything; the stream is over. Idempotent. */
  private finalize(): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.env.closed(this);
    // A request still held by admission control is withdrawn (it was never routed).
    this.held?.withdraw();
    this.held = undefined;
    this.body?.clear();
    this.headers = undefined;
    this.endCompletion();
    this.env.stats.streamClosed();
  }

  private logger(): Logger {
    const facts = this.facts;
    if (facts === undefined) return this.env.logger;
    this.log ??= requestLogger(this.env.logger, { requestId: facts.requestId, traceparent: facts.traceparent });
    return this.log;
  }
}

function protocolError(message: string): RouterError {
  return new RouterError('PROTOCOL', message);
}
