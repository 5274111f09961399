/**
 * Builders for ext_proc ProcessingRequests as Envoy sends them (header values in
 * raw_value as bytes), plus the codec round trip through the real protobuf definitions so
 * tests see exactly the decoded shapes grpc-js would deliver.
 */
import { extProcServiceDefinition } from '../../src/extproc/ext-proc-proto.js';
import type {
  BodySendMode,
  ProcessingRequest,
  ProcessingRequest__Output,
  ProcessingResponse,
  ProcessingResponse__Output,
} from '../../src/extproc/ext-proc-proto.js';
import type { HeaderMap__Output } from '../../src/extproc/ext-proc-proto.js';

export type Headers = Record<string, string>;

function headerMap(headers: Headers) {
  return { headers: Object.entries(headers).map(([key, v]) => ({ key, raw_value: Buffer.from(v, 'utf8') })) };
}

export interface RequestHeadersOptions {
  method?: string;
  path?: string;
  headers?: Headers;
  endOfStream?: boolean;
  /** Adds protocol_config (first message of a stream); omit to simulate Envoy < 1.34. */
  requestBodyMode?: BodySendMode;
  responseBodyMode?: BodySendMode;
  /** Subset hint: an array becomes a list value, a string a comma-joined string value. */
  subset?: string[] | string;
  observability?: boolean;
}

export function requestHeaders(o: RequestHeadersOptions = {}): ProcessingRequest {
  const msg: ProcessingRequest = {
    request_headers: {
      headers: headerMap({
        ':method': o.method ?? 'POST',
        ':path': o.path ?? '/v1/chat/completions',
        ':authority': 'gateway',
        ':scheme': 'http',
        'content-type': 'application/json',
        ...o.headers,
      }),
      end_of_stream: o.endOfStream ?? false,
    },
  };
  if (o.requestBodyMode !== undefined || o.responseBodyMode !== undefined) {
    msg.protocol_config = {
      request_body_mode: o.requestBodyMode ?? 'NONE',
      response_body_mode: o.responseBodyMode ?? 'NONE',
    };
  }
  if (o.subset !== undefined) msg.metadata_context = subsetMetadata(o.subset);
  if (o.observability) msg.observability_mode = true;
  return msg;
}

export function subsetMetadata(subset: string[] | string) {
  const value = Array.isArray(subset) ? { listValue: { values: subset.map((s) => ({ stringValue: s })) } } : { stringValue: subset };
  return { filter_metadata: { 'envoy.lb.subset_hint': { fields: { 'x-gateway-destination-endpoint-subset': value } } } };
}

export function servedMetadata(endpoint: string) {
  return { filter_metadata: { 'envoy.lb': { fields: { 'x-gateway-destination-endpoint-served': { stringValue: endpoint } } } } };
}

export function requestBody(body: string | Uint8Array, endOfStream: boolean): ProcessingRequest {
  return { request_body: { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body), end_of_stream: endOfStream } };
}

export function requestTrailers(trailers: Headers = { 'x-trailer': '1' }): ProcessingRequest {
  return { request_trailers: { trailers: headerMap(trailers) } };
}

export function responseHeaders(status = 200, endOfStream = false, extra: Headers = {}, served?: string): ProcessingRequest {
  const msg: ProcessingRequest = {
    response_headers: {
      headers: headerMap({ ':status': String(status), 'content-type': 'application/json', ...extra }),
      end_of_stream: endOfStream,
    },
  };
  if (served !== undefined) msg.metadata_context = servedMetadata(served);
  return msg;
}

export function responseBody(body: string | Uint8Array, endOfStream: boolean): ProcessingRequest {
  return { response_body: { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body), end_of_stream: endOfStream } };
}

export function responseTrailers(): ProcessingRequest {
  return { response_trailers: { trailers: headerMap({ 'grpc-status': '0' }) } };
}

export function chatBody(content: string, model = 'm1', extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    model,
    messages: [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content },
    ],
    ...extra,
  });
}

const method = () => extProcServiceDefinition().Process;

/** Encodes and decodes a request exactly as grpc-js would deliver it to the server. */
export function decodeAsServer(msg: ProcessingRequest): ProcessingRequest__Output {
  const m = method();
  return m.requestDeserialize(m.requestSerialize(msg));
}

/** Encodes and decodes a response exactly as a client (Envoy) would see it. */
export function decodeAsClient(msg: ProcessingResponse): ProcessingResponse__Output {
  const m = method();
  return m.responseDeserialize(m.responseSerialize(msg));
}

/** Header value set by a response's mutation (raw_value decoded), if any. */
export function headerValues(map: HeaderMap__Output | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of map?.headers ?? []) out[h.key] = h.raw_value.toString('utf8');
  return out;
}

/** The kind of answer a response is (oneof name), for order assertions. */
export function kindOf(msg: ProcessingResponse__Output): string {
  return msg.response ?? 'none';
}
