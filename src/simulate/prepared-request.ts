/**
 * A workload request in the two forms the simulation needs: the RouteRequest the router's
 * edge would build from the HTTP body (the real extractor, on the JSON bytes a client would
 * send), and the prompt token ids the engine model computes on (the HTTP simulator's
 * template and tokenizer, or the model tokenizer it runs with `--tokenizer`, so the same text
 * gives the same KV blocks in both simulators).
 */
import type { RouteRequest } from '../core/types.js';
import { extractPrompt, type ExtractOptions } from '../request/extract-prompt.js';
import type { ModelTokenizer } from '../tokenization/model-tokenizer.js';
import { blockHashes } from './engine/block-hash.js';
import { modelPromptTokenIds } from './engine/model-prompt-tokens.js';
import { renderChat } from './engine/prompt-template.js';
import { tokenize } from './engine/tokenizer.js';
import type { SimRequest } from './types.js';

/** The HTTP simulator's default characters per token (engine-side tokenizer). */
export const ENGINE_CHARS_PER_TOKEN = 4;

export class PreparedRequest {
  readonly tokens: readonly number[];
  /** Block keys by block size, made on first use (most runs ask for one size). */
  private hashes: Map<number, readonly number[]> | undefined;
  private readonly extracted: ReturnType<typeof extractPrompt>;

  constructor(
    readonly source: SimRequest,
    model: string,
    extract: ExtractOptions,
    /** The engines' tokenizer, when they tokenize as a real model does (else the fixed-chunk one). */
    tokenizer?: ModelTokenizer,
  ) {
    const r = source;
    const body =
      r.api === 'chat'
        ? { model, messages: r.messages ?? [], max_tokens: r.outputTokens, stream: true, ignore_eos: true }
        : { model, prompt: r.prompt ?? '', max_tokens: r.outputTokens, stream: true, ignore_eos: true };
    const path = r.api === 'chat' ? '/v1/chat/completions' : '/v1/completions';
    const raw = JSON.stringify(body);
    this.extracted = extractPrompt(path, Buffer.from(raw), extract);
    if (tokenizer !== undefined) {
      this.tokens = modelPromptTokenIds(tokenizer, raw);
      return;
    }
    const text = r.api === 'chat' ? renderChat(r.messages ?? []) : (r.prompt ?? '');
    const ids = tokenize(text, ENGINE_CHARS_PER_TOKEN);
    this.tokens = ids.length > 0 ? ids : [0];
  }

  /** The router's view of the request, arriving now. */
  routeRequest(requestId: string, nowMs: number, sessionKey?: string): RouteRequest {
    const p = this.extracted;
    return {
      requestId,
      model: p.model,
      prefix: p.prefix,
      promptChars: p.promptChars,
      promptTokens: p.promptTokens,
      ...(p.maxTokens !== undefined ? { maxTokens: p.maxTokens } : {}),
      ...(sessionKey !== undefined ? { sessionKey } : {}),
      stream: p.stream,
      ...(p.input !== undefined ? { promptInput: p.input } : {}),
      arrivalMs: nowMs,
    };
  }

  /** The engine's block keys at `blockSize` (what its prefix cache is keyed by), computed once. */
  blockHashes(blockSize: number): readonly number[] {
    this.hashes ??= new Map();
    let h = this.hashes.get(blockSize);
    if (h === undefined) {
      h = blockHashes(this.tokens, blockSize);
      this.hashes.set(blockSize, h);
    }
    return h;
  }
}
