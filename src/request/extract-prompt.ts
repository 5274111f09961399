/**
 * Turns an OpenAI-style inference body (chat completions or completions) into what the
 * router needs to route it: model, a bounded prompt prefix for cache affinity, size
 * estimates, max tokens and the stream flag. Pure and deterministic: the same path and
 * bytes always give the same result.
 *
 * Costs: the body is decoded once (invalid UTF-8 becomes U+FFFD replacement characters,
 * a leading BOM is dropped) and parsed once with JSON.parse, which is linear but holds
 * the whole document in memory (roughly 2-4x the body size for a 10 MB body); the edge
 * rejects bodies above `requests.maxBodyBytes` before calling this. Building the prefix
 * stops at `maxPrefixChars`; the rest of the prompt is only measured.
 */
import { RouterError } from '../core/errors.js';
import type { PromptInput } from '../core/types.js';
import { badField, isObject, optionalCount, own, type JsonObject } from './body-fields.js';
import { encodeChat } from './chat-prompt.js';
import { encodeCompletion } from './completion-prompt.js';
import { PrefixBuilder } from './prefix-builder.js';

export interface ExtractedPrompt {
  kind: 'chat' | 'completion';
  /** Requested model ('' when the body has none). */
  model: string;
  /** Encoded prompt, at most `maxPrefixChars` UTF-16 code units. */
  prefix: string;
  /** Length of the whole encoded prompt (UTF-16 code units); may exceed prefix.length. */
  promptChars: number;
  /** Exact for token-id prompts, else ceil(promptChars / charsPerToken). */
  promptTokens: number;
  /** `max_completion_tokens`, else `max_tokens`, if set. */
  maxTokens?: number;
  stream: boolean;
  /** The parsed prompt fields (messages + tools, or prompt), for router-side tokenization. */
  input?: PromptInput;
}

export interface ExtractOptions {
  /** Upper bound on prefix length (UTF-16 code units). */
  maxPrefixChars: number;
  /** Characters per token for the estimate (> 0). */
  charsPerToken: number;
}

const decoder = new TextDecoder('utf-8', { fatal: false });

/**
 * @param path request path (`:path`), query string allowed; decides chat vs completion.
 * @throws RouterError BAD_REQUEST for malformed bodies; the message names the field and
 *   the JSON type found, never any prompt text.
 */
export function extractPrompt(path: string, body: Uint8Array, opts: ExtractOptions): ExtractedPrompt {
  if (!Number.isInteger(opts.maxPrefixChars) || opts.maxPrefixChars < 0 || !(opts.charsPerToken > 0)) {
    throw new RouterError('INTERNAL', 'extractPrompt: maxPrefixChars must be an integer >= 0 and charsPerToken > 0');
  }
  let doc: unknown;
  try {
    doc = JSON.parse(decoder.decode(body));
  } catch {
    // The parser's message quotes the input, so it is deliberately not passed on.
    throw new RouterError('BAD_REQUEST', 'request body is not valid JSON');
  }
  if (!isObject(doc)) throw badField('request body', 'JSON object', doc);
  try {
    return fromDocument(path, doc, opts);
  } catch (err) {
    if (err instanceof RouterError) throw err;
    if (err instanceof RangeError) {
      throw new RouterError('BAD_REQUEST', 'request body is too deeply nested or too large to process');
    }
    throw RouterError.from(err);
  }
}

function fromDocument(path: string, doc: JsonObject, opts: ExtractOptions): ExtractedPrompt {
  const kind = kindOf(path, doc);
  const model = own(doc, 'model');
  if (model !== undefined && typeof model !== 'string') throw badField('model', 'string', model);
  const stream = own(doc, 'stream');
  if (stream !== undefined && typeof stream !== 'boolean') throw badField('stream', 'boolean', stream);
  const maxTokens = optionalCount(doc, 'max_completion_tokens') ?? optionalCount(doc, 'max_tokens');

  const out = new PrefixBuilder(opts.maxPrefixChars);
  let exactTokens: ReturnType<typeof encodeCompletion> | undefined;
  if (kind === 'chat') encodeChat(doc, out);
  else exactTokens = encodeCompletion(doc, out);
  const promptChars = out.chars;
  const result: ExtractedPrompt = {
    kind,
    model: model ?? '',
    prefix: out.build(),
    promptChars,
    promptTokens: exactTokens ?? Math.ceil(promptChars / opts.charsPerToken),
    stream: stream ?? false,
  };
  if (maxTokens !== undefined) result.maxTokens = maxTokens;
  if (kind === 'chat') {
    const tools = own(doc, 'tools');
    result.input = { kind, messages: own(doc, 'messages') as unknown[], ...(Array.isArray(tools) ? { tools } : {}) };
  } else {
    result.input = { kind, prompt: own(doc, 'prompt') };
  }
  return result;
}

/** By path suffix; for other paths, by which prompt field the body carries. */
function kindOf(path: string, doc: JsonObject): 'chat' | 'completion' {
  let p = path;
  const q = p.search(/[?#]/);
  if (q >= 0) p = p.slice(0, q);
  if (p.endsWith('/')) p = p.slice(0, -1);
  if (p.endsWith('/chat/completions')) return 'chat';
  if (p.endsWith('/completions')) return 'completion';
  if (own(doc, 'messages') !== undefined) return 'chat';
  if (own(doc, 'prompt') !== undefined) return 'completion';
  throw new RouterError('BAD_REQUEST', 'request has neither messages (chat) nor prompt (completions)');
}
