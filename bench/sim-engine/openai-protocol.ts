/**
 * The OpenAI-compatible wire format the simulator speaks: request-body validation for
 * /v1/chat/completions and /v1/completions, and builders for JSON responses, SSE chunks
 * and errors in the shapes vLLM produces (usage with prompt_tokens_details.cached_tokens).
 */
import { chatPrompt, completionPrompt, isRecord, PromptError, type RenderedPrompt } from '../../src/simulate/engine/prompt-template.js';
import { parseKvTransferParams, type KvTransferAsk } from './kv-transfer-params.js';

export type ApiKind = 'chat' | 'completions';

export interface InferenceRequest {
  readonly kind: ApiKind;
  /** Model named in the body, if any. */
  readonly model?: string;
  readonly stream: boolean;
  /** stream_options.include_usage: send a usage chunk before [DONE]. */
  readonly includeUsage: boolean;
  readonly maxTokens: number;
  readonly ignoreEos: boolean;
  readonly prompt: RenderedPrompt;
  readonly cacheSalt?: string;
  /** What `kv_transfer_params` asks (P/D disaggregation, kv-transfer-params.ts). */
  readonly kvTransfer?: KvTransferAsk;
}

/** An error that maps to an HTTP status and an OpenAI-style error body. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly type = status === 404 ? 'NotFoundError' : status >= 500 ? 'InternalServerError' : 'BadRequestError',
  ) {
    super(message);
  }
}

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
}

export function usageOf(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/** Parses and validates a request body; throws ApiError(400) on anything malformed. */
export function parseInferenceRequest(kind: ApiKind, rawBody: string, defaultMaxTokens: number): InferenceRequest {
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new ApiError(400, 'request body is not valid JSON');
  }
  if (!isRecord(body)) throw new ApiError(400, 'request body must be a JSON object');

  const model = body['model'];
  if (model !== undefined && typeof model !== 'string') throw new ApiError(400, "'model' must be a string");
  const stream = optBool(body, 'stream') ?? false;
  const so = body['stream_options'];
  if (so !== undefined && so !== null && !isRecord(so)) throw new ApiError(400, "'stream_options' must be an object");
  const includeUsage = isRecord(so) && so['include_usage'] === true;
  const ignoreEos = optBool(body, 'ignore_eos') ?? false;

  const maxRaw = kind === 'chat' ? (body['max_completion_tokens'] ?? body['max_tokens']) : body['max_tokens'];
  let maxTokens = defaultMaxTokens;
  if (maxRaw !== undefined && maxRaw !== null) {
    if (typeof maxRaw !== 'number' || !Number.isInteger(maxRaw) || maxRaw < 1) {
      throw new ApiError(400, 'max_tokens must be an integer >= 1');
    }
    maxTokens = maxRaw;
  }
  const salt = body['cache_salt'];
  if (salt !== undefined && typeof salt !== 'string') throw new ApiError(400, "'cache_salt' must be a string");

  const kvTransfer = parseKvTransferParams(body);
  if (typeof kvTransfer === 'string') throw new ApiError(400, kvTransfer);

  let prompt: RenderedPrompt;
  try {
    prompt = kind === 'chat' ? chatPrompt(body) : completionPrompt(body);
  } catch (err) {
    if (err instanceof PromptError) throw new ApiError(400, err.message);
    throw err;
  }
  return {
    kind,
    ...(model !== undefined ? { model } : {}),
    stream,
    includeUsage,
    maxTokens,
    ignoreEos,
    prompt,
    ...(salt !== undefined ? { cacheSalt: salt } : {}),
    ...(kvTransfer !== undefined ? { kvTransfer } : {}),
  };
}

function optBool(body: Record<string, unknown>, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new ApiError(400, `'${key}' must be a boolean`);
  return v;
}

export interface ResponseMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/** Full (non-streaming) response body. */
export function completionBody(kind: ApiKind, meta: ResponseMeta, text: string, finishReason: string, usage: Usage): object {
  if (kind === 'chat') {
    return {
      id: meta.id,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason }],
      usage,
    };
  }
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }],
    usage,
  };
}

/**
 * One streaming chunk. `piece` is the text delta (chat: `role` is added when `first`);
 * `finishReason` non-null marks the final content chunk.
 */
export function streamChunk(kind: ApiKind, meta: ResponseMeta, piece: string, finishReason: string | null, first = false): object {
  if (kind === 'chat') {
    const delta: Record<string, string> = first
      ? { role: 'assistant', content: piece }
      : finishReason !== null && piece === ''
        ? {}
        : { content: piece };
    return {
      id: meta.id,
      object: 'chat.completion.chunk',
      created: meta.created,
      model: meta.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
  }
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, text: piece, logprobs: null, finish_reason: finishReason }],
  };
}

/** The trailing usage chunk (stream_options.include_usage): empty choices, usage set. */
export function usageChunk(kind: ApiKind, meta: ResponseMeta, usage: Usage): object {
  return {
    id: meta.id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created: meta.created,
    model: meta.model,
    choices: [],
    usage,
  };
}

export function sseData(payload: object | string): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
}

export function errorBody(err: ApiError): object {
  return { error: { message: err.message, type: err.type, param: null, code: err.status } };
}
