/**
 * A request's output length in tokens, for the trace. Exact when the edge read the engine's
 * `usage` (completion_tokens); otherwise — Envoy's access log reports the response body's
 * size, not its tokens — estimated from that size with the layout OpenAI-compatible engines
 * (vLLM, SGLang) use: a streamed answer is one `data:` event per token, about 180 bytes of
 * JSON around each token's text (id, object, created, model, choices); a whole answer is
 * one JSON object of about 300 bytes around the text. The estimate's error is the spread of
 * those overheads between engines (ids of different lengths, extra null fields), about ±15%;
 * it is capped by the client's `max_tokens`. Why not ask Envoy for the tokens: the response
 * does not pass through the router (docs/envoy.md), and only the engine knows them.
 */

/** One SSE chat chunk around an empty delta, with a 33-character id and an empty model name. */
const CHAT_EVENT_BYTES = 199;
/** The same for a text-completion chunk. */
const COMPLETION_EVENT_BYTES = 176;
/** `data: [DONE]\n\n`, which ends every stream. */
const STREAM_TAIL_BYTES = 14;
/** A whole chat answer with its usage object, without text and model name. */
const CHAT_BODY_BYTES = 332;
const COMPLETION_BODY_BYTES = 294;

export interface OutputLengthInput {
  /** completion_tokens from the engine's usage, when the edge saw it. */
  readonly completionTokens?: number;
  /** Response body bytes (from the access log). */
  readonly responseBytes?: number;
  readonly stream: boolean;
  /** Whether the request was a chat request (else a text completion). */
  readonly chat: boolean;
  readonly model: string;
  readonly maxTokens?: number;
  readonly charsPerToken: number;
}

/** Output tokens and whether they were estimated; undefined when neither input is known. */
export function outputLength(i: OutputLengthInput): { tokens: number; estimated: boolean } | undefined {
  if (i.completionTokens !== undefined) return { tokens: i.completionTokens, estimated: false };
  if (i.responseBytes === undefined) return undefined;
  const model = Buffer.byteLength(i.model);
  let tokens: number;
  if (i.stream) {
    const perEvent = (i.chat ? CHAT_EVENT_BYTES : COMPLETION_EVENT_BYTES) + model + i.charsPerToken;
    tokens = Math.round(Math.max(0, i.responseBytes - STREAM_TAIL_BYTES) / perEvent);
  } else {
    const wrapper = (i.chat ? CHAT_BODY_BYTES : COMPLETION_BODY_BYTES) + model;
    tokens = Math.round(Math.max(0, i.responseBytes - wrapper) / i.charsPerToken);
  }
  if (i.maxTokens !== undefined) tokens = Math.min(tokens, i.maxTokens);
  return { tokens, estimated: true };
}
