/**
 * Request mapping: what Envoy sent for one inference request (its headers, the metadata it
 * forwarded, the gRPC stream's metadata, the body) turned into the core's RouteRequest.
 * Pure functions, so every field's rule is pinned by a table test: no clock, no state, the
 * request id generator and the prompt extractor are passed in.
 *
 * Rules: the request id is the client's `x-request-id` or a fresh one; the trace context is
 * the ext_proc stream's own `traceparent` (Envoy's span) when present, else the request's;
 * the subset hint comes from `metadata_context` (an empty hint names no endpoint: 503); the
 * tenant and priority come from the headers the admission config names (priority: an
 * integer clamped to ±MAX_PRIORITY, anything else 0); every header reaches the plugins (a
 * plugin reads the one its parameters name); without a body (header-only routing)
 * the prompt is empty.
 */
import { RouterError } from '../core/errors.js';
import type { PromptInput, RouteRequest } from '../core/types.js';
import type { HeaderLookup } from './header-map.js';
import type { Metadata__Output } from './ext-proc-proto.js';
import { readSubsetHint } from './lb-metadata.js';

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

/** Highest |priority| accepted from the priority header; larger values are clamped. */
export const MAX_PRIORITY = 1000;

/** What is known of an inference request once its headers arrived. */
export interface RequestFacts {
  readonly path: string;
  readonly requestId: string;
  readonly arrivalMs: number;
  readonly subset: string[] | undefined;
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
}

/** Everything the mapping needs that is fixed per server (prepared once by the edge). */
export interface RequestMapping {
  readonly extract: PromptExtractor;
  readonly maxBodyBytes: number;
  readonly extractOpts: { readonly maxPrefixChars: number; readonly charsPerToken: number };
  /** Lower-cased header names (absent: not read). */
  readonly tenantHeader?: string;
  readonly priorityHeader?: string;
}

/** The mapping's fixed part from the request config and the admission headers (any case). */
export function requestMapping(o: {
  extract: PromptExtractor;
  maxBodyBytes: number;
  maxPrefixChars: number;
  charsPerToken: number;
  tenantHeader?: string | undefined;
  priorityHeader?: string | undefined;
}): RequestMapping {
  return {
    extract: o.extract,
    maxBodyBytes: o.maxBodyBytes,
    extractOpts: { maxPrefixChars: o.maxPrefixChars, charsPerToken: o.charsPerToken },
    ...(o.tenantHeader !== undefined ? { tenantHeader: o.tenantHeader.toLowerCase() } : {}),
    ...(o.priorityHeader !== undefined ? { priorityHeader: o.priorityHeader.toLowerCase() } : {}),
  };
}

/**
 * The facts of a request from its headers, Envoy's `metadata_context` and the ext_proc
 * stream's gRPC metadata (`streamMetadata`: first value of a key).
 */
export function readRequestFacts(
  headers: HeaderLookup,
  metadata: Metadata__Output | null | undefined,
  streamMetadata: (key: string) => string | undefined,
  arrivalMs: number,
  newRequestId: () => string,
): RequestFacts {
  const grpcParent = streamMetadata('traceparent');
  const fromStream = grpcParent !== undefined && grpcParent !== '';
  return {
    path: headers.get(':path') ?? '',
    requestId: headers.get('x-request-id') || newRequestId(),
    arrivalMs,
    subset: readSubsetHint(metadata),
    traceparent: fromStream ? grpcParent : headers.get('traceparent'),
    tracestate: fromStream ? streamMetadata('tracestate') : headers.get('tracestate'),
  };
}

const HEADER_ONLY_PROMPT: PromptInfo = { kind: 'completion', model: '', prefix: '', promptChars: 0, promptTokens: 0, stream: false };

/**
 * The core's view of the request; `body` undefined = route on headers alone.
 * @throws RouterError BAD_REQUEST (empty or unparsable body), PAYLOAD_TOO_LARGE, NO_ENDPOINT (empty subset hint).
 */
export function toRouteRequest(facts: RequestFacts, headers: HeaderLookup, body: Uint8Array | undefined, m: RequestMapping): RouteRequest {
  let prompt = HEADER_ONLY_PROMPT;
  if (body !== undefined) {
    if (body.length === 0) throw new RouterError('BAD_REQUEST', 'request body is empty');
    if (body.length > m.maxBodyBytes) throw bodyTooLarge(m.maxBodyBytes);
    prompt = m.extract(facts.path, body, m.extractOpts);
  }
  if (facts.subset !== undefined && facts.subset.length === 0) {
    throw new RouterError('NO_ENDPOINT', 'the subset hint names no endpoints');
  }
  const tenant = m.tenantHeader !== undefined ? headers.get(m.tenantHeader) : undefined;
  const priority = m.priorityHeader !== undefined ? parsePriority(headers.get(m.priorityHeader)) : undefined;
  return {
    requestId: facts.requestId,
    model: prompt.model,
    prefix: prompt.prefix,
    promptChars: prompt.promptChars,
    promptTokens: prompt.promptTokens,
    maxTokens: prompt.maxTokens,
    subset: facts.subset,
    stream: prompt.stream,
    ...(tenant !== undefined && tenant !== '' ? { tenant } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(prompt.input !== undefined ? { promptInput: prompt.input } : {}),
    ...(prefersIfAvailable(headers.get('prefer')) ? { conditionalDecode: true } : {}),
    headers,
    arrivalMs: facts.arrivalMs,
    traceparent: facts.traceparent,
    tracestate: facts.tracestate,
  };
}

/** The priority header's value: an integer clamped to ±MAX_PRIORITY; anything else is 0. */
export function parsePriority(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = value.trim();
  if (!/^[+-]?[0-9]{1,9}$/.test(t)) return 0;
  return Math.max(-MAX_PRIORITY, Math.min(MAX_PRIORITY, Number(t)));
}

/** The error for a body over the limit. */
export function bodyTooLarge(limit: number): RouterError {
  return new RouterError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
}

/** The path without its query string, for logs (queries may carry user data). */
export function pathForLog(path: string): string {
  const q = path.indexOf('?');
  return q >= 0 ? path.slice(0, q) : path;
}

/** RFC 7240 `Prefer: if-available` (llm-d's conditional decode), among other preferences. */
export function prefersIfAvailable(value: string | undefined): boolean {
  if (value === undefined) return false;
  return value.split(',').some((p) => p.split(';')[0]!.trim().toLowerCase() === 'if-available');
}
