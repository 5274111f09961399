/**
 * A model's tokenizer and chat template, loaded from its own files (`tokenizer.json`,
 * `tokenizer_config.json`, optionally `chat_template.jinja`), so the router turns a request
 * into the same token ids the engine computes: the KV cache is keyed by those ids.
 *
 * - Tokenizer: `@huggingface/tokenizers` (the Hugging Face tokenizers pipeline in
 *   TypeScript, synchronous). Chat template: `@huggingface/jinja`, parsed once.
 * - Chat prompts are rendered like vLLM's OpenAI server does for a string-content template:
 *   text content parts joined with "\n", `add_generation_prompt` true, then tokenized
 *   without the tokenizer's own special tokens (the template writes any it wants).
 *   Completion prompts are tokenized with special tokens (vLLM's defaults). Where the
 *   template only writes message text out verbatim, prompts are rebuilt from a skeleton
 *   rendered once per conversation shape (chat-render-cache.ts) instead of re-interpreted.
 * - Piece cache: the tokenizer splits its input at added tokens (the chat markers) before
 *   anything else, so the ids of a rendered prompt are the concatenation of the ids of the
 *   text between markers. Those pieces (a system prompt, earlier turns) repeat across
 *   requests, so their ids are cached (LRU, bounded in characters) and only new text is
 *   tokenized. This is exact only when no added token strips neighbouring whitespace or
 *   depends on normalization; for such tokenizers the cache is off (`pieceCache` false)
 *   and whole prompts are encoded. A long piece that misses but starts like a stored one
 *   (a completions prompt: one piece) resumes from it (prefix-resume-cache.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { RouterError } from '../core/errors.js';
import { AddedTokenFinder } from './added-token-finder.js';
import { ChatRenderCache, contentIsOpaque, type ChatRenderStats, type TemplateMessage } from './chat-render-cache.js';
import { IdBuffer } from './id-buffer.js';
import { ownString } from './own-string.js';
import { PrefixResumeCache, type PrefixResumeStats } from './prefix-resume-cache.js';
import { PreTokenIdCache, type PreTokenCacheStats } from './pre-token-id-cache.js';

export interface ChatMessageInput {
  readonly role: string;
  readonly content?: unknown;
  readonly name?: string;
  readonly tool_calls?: unknown;
  readonly tool_call_id?: string;
}

export interface ModelTokenizerOptions {
  /** Characters of cached piece text kept (LRU); default 8,000,000. */
  readonly cacheChars?: number;
  /** Pieces shorter than this are not cached (cheap to redo); default 64. */
  readonly minCachedPieceChars?: number;
  /** Cache ids per pre-token where the tokenizer allows it exactly (pre-token-id-cache.ts); default true. */
  readonly preTokenCache?: boolean;
  /** Resume long sections from a stored one with the same start where exact (prefix-resume-cache.ts); default true. */
  readonly prefixResume?: boolean;
  /** Render chat prompts from cached skeletons where the template allows it exactly (chat-render-cache.ts); default true. */
  readonly renderCache?: boolean;
}

export interface TrackedIds {
  /** The ids; from `encodeTracked` a view of a buffer the next call overwrites. */
  readonly ids: Uint32Array | readonly number[];
  /** The text the ids encode. */
  readonly text: string;
  /**
   * Prefixes served from caches, ascending, as flat (chars, ids) pairs: the ids of
   * `text.slice(0, chars)` are `ids.slice(0, ids)`.
   */
  readonly stable: readonly number[];
}

export interface TokenizerCacheStats {
  readonly enabled: boolean;
  readonly hits: number;
  readonly misses: number;
  readonly cachedPieces: number;
  readonly cachedChars: number;
  /** Characters of pieces not served whole from the piece cache. */
  readonly encodedChars: number;
  /** Per-pre-token id cache (byte-level BPE tokenizers), when in use. */
  readonly preTokens?: PreTokenCacheStats;
  /** Sections resumed from a stored section with the same start (GPT-2 pre-tokenizer), when in use. */
  readonly prefixResume?: PrefixResumeStats;
}

interface CachedPiece {
  /** The stored key (an own copy, see own-string.ts). */
  readonly text: string;
  readonly ids: Uint32Array;
}

interface AddedTokenSpec {
  readonly id: number;
  readonly content: string;
  readonly special?: boolean;
  readonly lstrip?: boolean;
  readonly rstrip?: boolean;
  readonly single_word?: boolean;
  readonly normalized?: boolean;
}

export class ModelTokenizer {
  private readonly template: Template | undefined;
  private readonly renderCache: ChatRenderCache | undefined;
  private readonly splitter: AddedTokenFinder | undefined;
  private readonly preTokens: PreTokenIdCache | undefined;
  private readonly resume: PrefixResumeCache | undefined;
  private readonly addedIds = new Map<string, number>();
  private readonly cache = new Map<string, CachedPiece>();
  private readonly out = new IdBuffer();
  private cachedChars = 0;
  private hits = 0;
  private misses = 0;
  private encodedChars = 0;
  private readonly cacheChars: number;
  private readonly minPiece: number;
  /** Ids the post-processor adds around a single sequence (completions). */
  private readonly specialPrefix: readonly number[];
  private readonly specialSuffix: readonly number[];
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  /** How message content reaches the template (vLLM's detection): joined text, or a list of parts. */
  readonly contentFormat: 'string' | 'openai';
  private readonly developerRole: boolean;

  constructor(
    private readonly tokenizer: Tokenizer,
    tokenizerJson: Record<string, unknown>,
    config: Record<string, unknown>,
    chatTemplate: string | undefined,
    opts: ModelTokenizerOptions = {},
  ) {
    this.cacheChars = opts.cacheChars ?? 8_000_000;
    this.minPiece = opts.minCachedPieceChars ?? 64;
    this.template = chatTemplate === undefined ? undefined : new Template(chatTemplate);
    this.contentFormat = chatTemplate === undefined ? 'string' : detectContentFormat(chatTemplate);
    const template = this.template;
    this.renderCache =
      template === undefined || chatTemplate === undefined
        ? undefined
        : new ChatRenderCache(
            (m, t) => this.renderTemplate(template, m, t),
            opts.renderCache !== false && contentIsOpaque(template.parsed, chatTemplate, this.contentFormat),
            this.contentFormat,
          );
    this.developerRole = chatTemplate !== undefined && (chatTemplate.includes('"developer"') || chatTemplate.includes("'developer'"));
    this.bosToken = tokenText(config['bos_token']);
    this.eosToken = tokenText(config['eos_token']);
    const added = Array.isArray(tokenizerJson['added_tokens']) ? (tokenizerJson['added_tokens'] as AddedTokenSpec[]) : [];
    const exact =
      added.every((t) => !t.lstrip && !t.rstrip && !t.single_word) &&
      (tokenizerJson['normalizer'] == null || added.every((t) => t.normalized === false));
    for (const t of added) this.addedIds.set(t.content, t.id);
    // Sections are only known when added tokens split the text exactly (or there are none).
    if (opts.preTokenCache !== false && (exact || added.length === 0)) this.preTokens = PreTokenIdCache.create(tokenizer, tokenizerJson);
    this.resume = opts.prefixResume === false ? undefined : PrefixResumeCache.create(this.preTokens);
    if (exact && added.length > 0) this.splitter = new AddedTokenFinder(added.map((t) => t.content));
    const probe = 'a';
    const bare = tokenizer.encode(probe, { add_special_tokens: false }).ids;
    const full = tokenizer.encode(probe, { add_special_tokens: true }).ids;
    const at = indexOfSeq(full, bare);
    this.specialPrefix = at < 0 ? [] : full.slice(0, at);
    this.specialSuffix = at < 0 ? [] : full.slice(at + bare.length);
  }

  /** Loads `tokenizer.json`, `tokenizer_config.json` and, if present, `chat_template.jinja` from `dir`. */
  static async fromDirectory(dir: string, opts: ModelTokenizerOptions = {}): Promise<ModelTokenizer> {
    const tj = await readJson(join(dir, 'tokenizer.json'));
    const cfg = await readJson(join(dir, 'tokenizer_config.json'));
    let template: string | undefined;
    try {
      template = await readFile(join(dir, 'chat_template.jinja'), 'utf8');
    } catch {
      template = templateFromConfig(cfg['chat_template']);
    }
    let tok: Tokenizer;
    try {
      tok = new Tokenizer(tj, cfg);
    } catch (err) {
      throw new RouterError('BAD_CONFIG', `tokenizer in ${dir} could not be loaded: ${(err as Error).message}`);
    }
    return new ModelTokenizer(tok, tj, cfg, template, opts);
  }

  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /** Whether rendered prompts are tokenized piece by piece with the cache. */
  get pieceCache(): boolean {
    return this.splitter !== undefined;
  }

  /** The chat prompt text exactly as the engine renders it (generation prompt included). */
  renderChat(messages: readonly ChatMessageInput[], tools?: readonly unknown[]): string {
    if (this.renderCache === undefined) throw new RouterError('BAD_CONFIG', 'model has no chat template');
    const parts = this.contentFormat === 'openai';
    const msgs = messages.map((m) => ({
      ...m,
      role: m.role === 'developer' && !this.developerRole ? 'system' : m.role,
      content: parts ? contentParts(m.content) : flattenContent(m.content),
    }));
    return this.renderCache.renderChat(msgs, tools !== undefined && tools.length > 0 ? tools : undefined);
  }

  /** The template interpreter on already converted messages (what the render cache reproduces). */
  private renderTemplate(template: Template, messages: readonly TemplateMessage[], tools: readonly unknown[] | undefined): string {
    return template.render({
      messages: messages as TemplateMessage[],
      ...(tools !== undefined ? { tools: tools as unknown[] } : {}),
      add_generation_prompt: true,
      bos_token: this.bosToken ?? '',
      eos_token: this.eosToken ?? '',
    });
  }

  /** Chat render cache counters (undefined without a chat template). */
  renderStats(): ChatRenderStats | undefined {
    return this.renderCache?.stats();
  }

  /** Token ids of a chat request as the engine computes them. */
  chatTokenIds(messages: readonly ChatMessageInput[], tools?: readonly unknown[]): number[] {
    return this.encode(this.renderChat(messages, tools), false);
  }

  /** Token ids of a text prompt; `addSpecialTokens` as the tokenizer's post-processor does. */
  encode(text: string, addSpecialTokens: boolean): number[] {
    return Array.from(this.encodeTracked(text, addSpecialTokens).ids);
  }

  /**
   * Like `encode`, also telling which prefixes of the text were served from caches (a
   * repeated system prompt, earlier turns, the shared start of a completions prompt): natural
   * keys for caching work on them. `ids` is a view of a buffer reused by the next call: copy
   * it to keep it.
   */
  encodeTracked(text: string, addSpecialTokens: boolean): TrackedIds {
    const out = this.out;
    out.length = 0;
    if (addSpecialTokens) out.pushAll(this.specialPrefix);
    const stable: number[] = [];
    if (this.splitter === undefined) {
      if (this.addedIds.size === 0) this.encodeLong(text, out, 0, stable);
      else {
        this.encodedChars += text.length;
        out.pushAll(this.tokenizer.encode(text, { add_special_tokens: false }).ids);
      }
    } else {
      const finder = this.splitter;
      let last = 0;
      for (let m = finder.next(text, 0); m !== undefined; m = finder.next(text, last)) {
        if (m.index > last) this.encodePiece(text.slice(last, m.index), out, last, stable);
        out.push(this.addedIds.get(m.token)!);
        last = m.index + m.token.length;
      }
      if (last < text.length) this.encodePiece(last === 0 ? text : text.slice(last), out, last, stable);
    }
    if (addSpecialTokens) out.pushAll(this.specialSuffix);
    return { ids: out.view(), text, stable };
  }

  /** The library's own encoding of the whole text (the reference the piece cache must equal). */
  encodeWhole(text: string, addSpecialTokens: boolean): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  cacheStats(): TokenizerCacheStats {
    return {
      enabled: this.splitter !== undefined,
      hits: this.hits,
      misses: this.misses,
      cachedPieces: this.cache.size,
      cachedChars: this.cachedChars,
      encodedChars: this.encodedChars,
      ...(this.preTokens !== undefined ? { preTokens: this.preTokens.stats() } : {}),
      ...(this.resume !== undefined ? { prefixResume: this.resume.stats() } : {}),
    };
  }

  /** Appends the ids of text holding no added token: per pre-token where possible, else whole. */
  private encodeSection(section: string, out: IdBuffer): void {
    this.encodedChars += section.length;
    if (this.preTokens?.encodeSection(section, out) === true) return;
    out.pushAll(this.tokenizer.encode(section, { add_special_tokens: false }).ids);
  }

  /**
   * Like `encodeSection`, resuming from a stored section with the same start (recorded in
   * `stable`); true when it resumed.
   */
  private encodeLong(section: string, out: IdBuffer, at: number, stable: number[]): boolean {
    const r = this.resume?.encode(section, out);
    if (r === undefined) {
      this.encodeSection(section, out);
      return false;
    }
    this.encodedChars += section.length - r.chars;
    if (r.chars > 0) stable.push(at + r.chars, r.ids);
    return r.chars > 0;
  }

  /** Appends the piece's ids (it starts at `at` in the text); a cached prefix of it is recorded in `stable`. */
  private encodePiece(piece: string, out: IdBuffer, at: number, stable: number[]): void {
    if (piece.length < this.minPiece) {
      this.encodeSection(piece, out);
      return;
    }
    const hit = this.cache.get(piece);
    if (hit !== undefined) {
      this.hits++;
      // Re-inserted under its own stored key: the request's piece (a view of the whole
      // request text) must not become the key.
      this.cache.delete(hit.text);
      this.cache.set(hit.text, hit);
      out.pushAll(hit.ids);
      stable.push(at + piece.length, out.length);
      return;
    }
    this.misses++;
    const start = out.length;
    // A resumed piece is a variant of a stored one (a new question after a known document):
    // kept whole it would only serve an exact repeat, which resuming serves nearly as well.
    const resumed = this.encodeLong(piece, out, at, stable);
    if (!resumed && piece.length <= this.cacheChars) {
      const text = ownString(piece);
      this.cache.set(text, { text, ids: out.copy(start) });
      this.cachedChars += piece.length;
      while (this.cachedChars > this.cacheChars) {
        const oldest = this.cache.keys().next().value as string;
        this.cache.delete(oldest);
        this.cachedChars -= oldest.length;
      }
    }
  }
}

/**
 * vLLM's choice of content format: "openai" (content stays a list of parts) when the template
 * loops over a message's content, else "string". vLLM walks the Jinja AST; this looks for the
 * same loops in the source: `for x in <message var>['content']` / `.content`, where the
 * message var is a `for … in messages` loop target, or `for x in content`.
 */
export function detectContentFormat(template: string): 'string' | 'openai' {
  const vars = [...template.matchAll(/for\s+(\w+)\s+in\s+messages\b/g)].map((m) => m[1]!);
  for (const v of vars) {
    if (new RegExp(`for\\s+\\w+\\s+in\\s+${v}\\s*(\\[\\s*['"]content['"]\\s*\\]|\\.content\\b)`).test(template)) return 'openai';
  }
  return /for\s+\w+\s+in\s+content\b/.test(template) ? 'openai' : 'string';
}

/** vLLM's "openai" content format: a string becomes one text part; text parts are kept, others reduced to their type. */
function contentParts(content: unknown): unknown {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return content;
  return content.map((part: unknown) => {
    if (typeof part === 'string') return { type: 'text', text: part };
    const p = (typeof part === 'object' && part !== null ? part : {}) as Record<string, unknown>;
    return p['type'] === 'text' ? { type: 'text', text: p['text'] } : { type: p['type'] };
  });
}

/** vLLM's "string" content format: text parts joined with newlines; other parts dropped. */
function flattenContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content ?? '';
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') texts.push(part);
    else if (typeof part === 'object' && part !== null && (part as Record<string, unknown>)['type'] === 'text') {
      const t = (part as Record<string, unknown>)['text'];
      if (typeof t === 'string') texts.push(t);
    }
  }
  return texts.join('\n');
}

function templateFromConfig(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const named = v.find((t) => typeof t === 'object' && t !== null && (t as Record<string, unknown>)['name'] === 'default') ?? v[0];
    const t = typeof named === 'object' && named !== null ? (named as Record<string, unknown>)['template'] : undefined;
    return typeof t === 'string' ? t : undefined;
  }
  return undefined;
}

function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as Record<string, unknown>)['content'] === 'string') {
    return (v as Record<string, unknown>)['content'] as string;
  }
  return undefined;
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new RouterError('BAD_CONFIG', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const doc: unknown = JSON.parse(text);
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('not an object');
    return doc as Record<string, unknown>;
  } catch (err) {
    throw new RouterError('BAD_CONFIG', `${path} is not a JSON object: ${(err as Error).message}`);
  }
}

function indexOfSeq(hay: readonly number[], needle: readonly number[]): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
