/**
 * Pure builders for every ProcessingResponse the edge sends. Kept free of state so each
 * wire shape can be pinned by a unit test. Rules they encode (see docs/extproc.md):
 * - header values go only in `raw_value`, always as a Buffer (a JS string in a bytes field
 *   would be base64-decoded by protobufjs; a `value` would reach Envoy as an empty header);
 * - the destination header is always written with append=false, so a client-supplied
 *   value can never survive;
 * - the header and the `envoy.lb` metadata carry the same string (chosen host first, then
 *   the ordered fallbacks); `cacheroute/destination` carries the chosen host alone for
 *   ORIGINAL_DST, which accepts exactly one literal ip:port.
 *
 * The constant answers (plain CONTINUEs) are shared, deep-frozen objects, and so are the
 * decision answers: a fleet produces few distinct destination lists, so each list's answer is
 * built once, frozen and kept in a bounded memo (the serializer then encodes it once too, see
 * ext-proc-proto.ts). Same input, same message: the builders stay pure to their callers.
 */
import type { RouteDecision } from '../core/types.js';
import type { RouterError } from '../core/errors.js';
import { httpStatusOf } from './error-status.js';
import { wireReady } from './ext-proc-proto.js';
import type { HeaderMutation, HeaderValueOption, ProcessingResponse, StatusCode, Struct } from './ext-proc-proto.js';

export const DESTINATION_HEADER = 'x-gateway-destination-endpoint';
/**
 * llm-d's header naming the prefill engine of a split request, read by the decode-side
 * sidecar (`cacheroute pd-sidecar`). Only the router writes it: a client's value is replaced
 * (split) or removed (not split, pass-through), so a client can never choose the prefiller.
 */
export const PREFILLER_HEADER = 'x-prefiller-host-port';
export const LB_METADATA_NAMESPACE = 'envoy.lb';
export const CACHEROUTE_METADATA_NAMESPACE = 'cacheroute';
export const CACHEROUTE_DESTINATION_KEY = 'destination';
/** Under `cacheroute`: the key Envoy's access log entry names to end the request (pending-responses.ts). */
export const CACHEROUTE_TICKET_KEY = 'ticket';
/**
 * Access log custom tag carrying the microseconds from the first byte sent upstream to the
 * first upstream response body byte: `%COMMON_DURATION(US_TX_BEG:US_RX_BODY_BEG:us)%`.
 * Why this and not the entry's time_to_first_upstream_rx_byte: a streaming vLLM server sends
 * its response headers before prefill starts, so the first byte is not the first token.
 */
export const CACHEROUTE_FIRST_BODY_TAG = 'cacheroute.first_body_us';
/** Under `cacheroute`: the decision summary, which Envoy copies into the response header. */
export const CACHEROUTE_DECISION_KEY = 'decision';

/** Optional extras of the decision's `cacheroute` metadata. */
export interface DecisionExtras {
  /** The pending-response key (access-log completion). */
  readonly ticket?: string;
  /** The decision summary (telemetry.decisionHeader). */
  readonly summary?: string;
  /** The client sent PREFILLER_HEADER: remove it unless the decision sets it. */
  readonly stripPrefiller?: boolean;
}

/** The extras for a ticket key and a decision summary (either may be absent). */
export function decisionExtras(ticket: string | undefined, summary: string | undefined, stripPrefiller = false): DecisionExtras {
  return {
    ...(ticket !== undefined ? { ticket } : {}),
    ...(summary !== undefined ? { summary } : {}),
    ...(stripPrefiller ? { stripPrefiller: true } : {}),
  };
}

/** Routing headers only the router may set, as the client sent them (removed on pass-through). */
export function forgedRoutingHeaders(has: (name: string) => boolean): string[] {
  return [DESTINATION_HEADER, PREFILLER_HEADER].filter(has);
}
/** Error messages are truncated to this many characters (they must stay small). */
const MAX_ERROR_MESSAGE_CHARS = 200;

/** One header to set, replacing any existing values (ext_proc honours only `append`). */
export function setHeader(key: string, value: string): HeaderValueOption {
  return { header: { key, raw_value: Buffer.from(value, 'utf8') }, append: { value: false } };
}

/** `ip:port` of the chosen endpoint followed by the fallbacks, comma-separated. */
export function destinationList(decision: RouteDecision): string {
  let out = decision.endpoint.id;
  for (const fb of decision.fallbacks) out += ',' + fb.id;
  return out;
}

/** Header mutation announcing the decision (plus optional extra headers). */
export function routingHeaderMutation(decision: RouteDecision, extra: readonly HeaderValueOption[] = []): HeaderMutation {
  return { set_headers: [setHeader(DESTINATION_HEADER, destinationList(decision)), ...extra] };
}

/** Dynamic metadata announcing the decision under `envoy.lb` and `cacheroute`. */
export function routingMetadata(decision: RouteDecision, extras?: DecisionExtras): Struct {
  return metadataFor(destinationList(decision), decision.endpoint.id, extras);
}

function metadataFor(destinations: string, chosen: string, extras: DecisionExtras | undefined): Struct {
  const ours: Struct = { fields: { [CACHEROUTE_DESTINATION_KEY]: { stringValue: chosen } } };
  if (extras?.ticket !== undefined) ours.fields![CACHEROUTE_TICKET_KEY] = { stringValue: extras.ticket };
  if (extras?.summary !== undefined) ours.fields![CACHEROUTE_DECISION_KEY] = { stringValue: extras.summary };
  return {
    fields: {
      [LB_METADATA_NAMESPACE]: {
        structValue: { fields: { [DESTINATION_HEADER]: { stringValue: destinations } } },
      },
      [CACHEROUTE_METADATA_NAMESPACE]: { structValue: ours },
    },
  };
}

/**
 * Answer to request headers that carries the decision (FULL_DUPLEX_STREAMED after the body
 * ended, or header-only routing). clear_route_cache is honoured here because the same
 * response carries a header mutation.
 */
export function requestHeadersWithDecision(decision: RouteDecision, extras?: DecisionExtras): ProcessingResponse {
  return withDecision(decision, 'request_headers', extras);
}

/** Answer to a BUFFERED request body that carries the decision (headers are still held). */
export function requestBodyWithDecision(decision: RouteDecision, extras?: DecisionExtras): ProcessingResponse {
  return withDecision(decision, 'request_body', extras);
}

/** CommonResponse.ResponseStatus CONTINUE on the wire. */
const RESPONSE_STATUS_CONTINUE = 0;

/** Distinct destination lists kept per answer kind before the memo starts over. */
const DECISION_MEMO_SIZE = 512;
const decisionMemo = {
  request_headers: new Map<string, ProcessingResponse>(),
  request_body: new Map<string, ProcessingResponse>(),
};

function withDecision(
  decision: RouteDecision,
  member: 'request_headers' | 'request_body',
  extras: DecisionExtras | undefined,
): ProcessingResponse {
  const destinations = destinationList(decision);
  const prefill = decision.disagg?.prefill?.id;
  const strip = prefill === undefined && extras?.stripPrefiller === true;
  const key = prefill !== undefined ? `${destinations} ${prefill}` : strip ? `${destinations} -` : destinations;
  // A per-request ticket or summary makes the answer unique: only plain answers are shared.
  const unique = extras?.ticket !== undefined || extras?.summary !== undefined;
  const memo = decisionMemo[member];
  const known = unique ? undefined : memo.get(key);
  if (known !== undefined) return known;
  const set = [setHeader(DESTINATION_HEADER, destinations)];
  if (prefill !== undefined) set.push(setHeader(PREFILLER_HEADER, prefill));
  const answer: ProcessingResponse = {
    [member]: {
      response: {
        // The enum's number (CONTINUE = 0): a unique answer is encoded as built (wireReady).
        status: unique ? RESPONSE_STATUS_CONTINUE : 'CONTINUE',
        header_mutation: strip ? { set_headers: set, remove_headers: [PREFILLER_HEADER] } : { set_headers: set },
        clear_route_cache: true,
      },
    },
    dynamic_metadata: metadataFor(destinations, decision.endpoint.id, extras),
  };
  // Every value is already in wire form (numbers, Buffers, Struct values), so the per-request
  // answer skips protobufjs' fromObject, which was most of its encoding cost.
  if (unique) return wireReady(answer);
  const built = deepFreeze(answer);
  if (memo.size >= DECISION_MEMO_SIZE) memo.clear();
  memo.set(key, built);
  return built;
}

/** Plain CONTINUE for request headers; optionally removes headers (e.g. a forged destination). */
export function continueRequestHeaders(removeHeaders: readonly string[] = []): ProcessingResponse {
  if (removeHeaders.length === 0) return CONTINUE.requestHeaders;
  return {
    request_headers: { response: { status: 'CONTINUE', header_mutation: { remove_headers: [...removeHeaders] } } },
  };
}

/** CONTINUE for response headers; optionally sets headers (the decision summary). */
export function continueResponseHeaders(setHeaders: readonly HeaderValueOption[] = []): ProcessingResponse {
  if (setHeaders.length === 0) return CONTINUE.responseHeaders;
  return { response_headers: { response: { status: 'CONTINUE', header_mutation: { set_headers: [...setHeaders] } } } };
}

/** CONTINUE for a request body chunk (BUFFERED / STREAMED modes). */
export function continueRequestBody(): ProcessingResponse {
  return CONTINUE.requestBody;
}

/** CONTINUE for a response body chunk (BUFFERED / STREAMED modes). */
export function continueResponseBody(): ProcessingResponse {
  return CONTINUE.responseBody;
}

/** FULL_DUPLEX_STREAMED: give a request body chunk back to Envoy (it drained it). */
export function streamedRequestBody(body: Uint8Array, endOfStream: boolean): ProcessingResponse {
  return streamedBody('request_body', body, endOfStream);
}

/** FULL_DUPLEX_STREAMED: give a response body chunk back to Envoy. */
export function streamedResponseBody(body: Uint8Array, endOfStream: boolean): ProcessingResponse {
  return streamedBody('response_body', body, endOfStream);
}

function streamedBody(member: 'request_body' | 'response_body', body: Uint8Array, endOfStream: boolean): ProcessingResponse {
  const response = { response: { body_mutation: { streamed_response: { body: toBuffer(body), end_of_stream: endOfStream } } } };
  return wireReady(member === 'request_body' ? { request_body: response } : { response_body: response });
}

export function continueRequestTrailers(): ProcessingResponse {
  return CONTINUE.requestTrailers;
}

export function continueResponseTrailers(): ProcessingResponse {
  return CONTINUE.responseTrailers;
}

/** Freezes a message tree; byte buffers (header values) cannot be frozen and are left as they are. */
function deepFreeze<T extends object>(value: T): T {
  for (const v of Object.values(value)) {
    if (typeof v === 'object' && v !== null && !ArrayBuffer.isView(v) && !Object.isFrozen(v)) deepFreeze(v as object);
  }
  return Object.freeze(value);
}

/** The constant answers: deep-frozen, since every stream shares them. */
const CONTINUE = {
  requestHeaders: deepFreeze<ProcessingResponse>({ request_headers: { response: { status: 'CONTINUE' } } }),
  responseHeaders: deepFreeze<ProcessingResponse>({ response_headers: { response: { status: 'CONTINUE' } } }),
  requestBody: deepFreeze<ProcessingResponse>({ request_body: { response: { status: 'CONTINUE' } } }),
  responseBody: deepFreeze<ProcessingResponse>({ response_body: { response: { status: 'CONTINUE' } } }),
  requestTrailers: deepFreeze<ProcessingResponse>({ request_trailers: {} }),
  responseTrailers: deepFreeze<ProcessingResponse>({ response_trailers: {} }),
};

/** Small JSON error body: `{"error":{"code":"BAD_REQUEST","message":"..."}}`. */
export function errorBody(err: RouterError): Buffer {
  const message = err.message.length > MAX_ERROR_MESSAGE_CHARS ? err.message.slice(0, MAX_ERROR_MESSAGE_CHARS) + '…' : err.message;
  return Buffer.from(JSON.stringify({ error: { code: err.code, message } }), 'utf8');
}

/**
 * Local reply for an error: status from the one mapping table, JSON body, JSON content type,
 * and `retry-after` (whole seconds, at least 1) when the error says when to come back.
 */
export function immediateErrorResponse(err: RouterError): ProcessingResponse {
  const headers = [setHeader('content-type', 'application/json')];
  if (err.retryAfterMs !== undefined) headers.push(setHeader('retry-after', String(Math.max(1, Math.ceil(err.retryAfterMs / 1000)))));
  return {
    immediate_response: {
      status: { code: httpStatusOf(err.code) as StatusCode },
      headers: { set_headers: headers },
      body: errorBody(err),
      details: 'cacheroute_' + err.code.toLowerCase(),
    },
  };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
