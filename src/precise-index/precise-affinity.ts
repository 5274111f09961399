/**
 * Index modes over the engines' caches: `approximate` (the router's own routing history,
 * prefix-index.ts), `precise` (engine KV events only, event-fed-index.ts) and `hybrid`
 * (events confirm and evict; each routing decision also adds a short-lived speculative
 * entry, so a burst of siblings co-locates before the first one's prefill is published).
 *
 * Per endpoint, the fraction of the request's blocks believed cached is:
 * - synced endpoint: precise matched token blocks ÷ request token blocks; in hybrid mode the
 *   larger of that and the speculative match;
 * - endpoint without a trustworthy feed (no event yet, or resyncing after a gap, disconnect
 *   or overflow, for `resyncWindowMs`): the approximate fraction, whose entries for that
 *   endpoint were dropped at the resync — only routings made since count — or the precise
 *   one if larger. After the window it is trusted as precise again.
 * - request without router-side tokens (no tokenizer for its model, not loaded yet, no
 *   parsed prompt): the approximate fraction for every endpoint.
 *
 * Speculative entries live in their own PrefixIndex and leave it when the engine stores
 * the block (confirmed: the precise index has it), when the engine evicts it, or after
 * `speculativeTtlMs` (the request failed or went elsewhere).
 */
import type { PromptInput } from '../core/types.js';
import { RouterError } from '../core/errors.js';
import type { BlockHashes } from '../prefix-cache/block-hasher.js';
import { EventFedIndex } from './event-fed-index.js';
import { PrefixIndex } from '../prefix-cache/prefix-index.js';
import type { ChatMessageInput, ModelTokenizer, TrackedIds } from '../tokenization/model-tokenizer.js';
import { setKey, type TokenBlockHasher } from '../tokenization/token-block-hasher.js';
import { ownString } from '../tokenization/own-string.js';
import type { HistogramCell, HotPathHistogram } from '../util/hot-path-histogram.js';

export const INDEX_MODES = ['approximate', 'precise', 'hybrid'] as const;
export type IndexMode = (typeof INDEX_MODES)[number];

export interface PreciseAffinityOptions {
  readonly mode: IndexMode;
  readonly speculativeTtlMs: number;
  readonly resyncWindowMs: number;
  /** At most this many leading token blocks are keyed per request. */
  readonly maxBlocks: number;
  readonly endpoints: number;
}

export interface ModelTokenization {
  readonly tokenizer: ModelTokenizer;
  /** Engine KV block size in tokens. */
  readonly blockSize: number;
}

export interface RequestKeys {
  readonly keys: BlockHashes;
  readonly tokens: number;
  /** Microseconds spent rendering, tokenizing and hashing. */
  readonly micros: number;
}

export interface TokenizationCost {
  readonly requests: number;
  readonly totalMicros: number;
  readonly maxMicros: number;
  readonly failures: number;
  /** Requests whose cached text prefix had its block keys memoised (hits) or not (misses). */
  readonly keyMemoHits: number;
  readonly keyMemoMisses: number;
}

interface Speculative {
  readonly e: number;
  readonly keys: BlockHashes;
  readonly expiresMs: number;
}

const MAX_SPECULATIVE = 100_000;
const MAX_KEY_MEMO = 256;

interface KeyMemo {
  readonly key: string;
  /** The text prefix the keys were computed from (compared in full on every hit). */
  readonly text: string;
  readonly count: number;
  readonly lo: Int32Array;
  readonly hi: Int32Array;
}

/** The memo key of a cached prefix: model, block size, its length in chars and ids, and its last characters. */
function memoKey(model: string, bs: number, chars: number, ids: number, text: string): string {
  return `${model}\u0000${bs}\u0000${chars}\u0000${ids}\u0000${text.slice(Math.max(0, chars - 32), chars)}`;
}

function prefix(text: string, chars: number): string {
  return chars === text.length ? text : text.slice(0, chars);
}

function tailFrom(ids: Uint32Array | readonly number[], start: number): Uint32Array | readonly number[] {
  return ids instanceof Uint32Array ? ids.subarray(start) : ids.slice(start);
}

function joinKey(lo: number, hi: number): bigint {
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
}

export class PreciseAffinity {
  readonly events: EventFedIndex;
  private readonly speculative: PrefixIndex;
  private readonly expiry: Speculative[] = [];
  private expiryHead = 0;
  private readonly one = { count: 1, lo: new Int32Array(1), hi: new Int32Array(1) };
  private costRequests = 0;
  private costTotal = 0;
  private costMax = 0;
  private failures = 0;
  private memoHits = 0;
  private memoMisses = 0;
  private readonly costCells = new Map<string, HistogramCell>();
  private readonly keyMemo = new Map<string, KeyMemo>();

  constructor(
    readonly opts: PreciseAffinityOptions,
    private readonly hasher: TokenBlockHasher,
    private readonly models: ReadonlyMap<string, ModelTokenization>,
    private readonly nowMicros: () => number,
    onResync?: (e: number) => void,
    /** Receives each request's tokenization cost in seconds, by model. */
    private readonly costSeconds?: HotPathHistogram<'model'>,
  ) {
    if (!INDEX_MODES.includes(opts.mode)) throw new RouterError('BAD_CONFIG', `index mode must be one of ${INDEX_MODES.join(', ')}`);
    this.events = new EventFedIndex(hasher, {
      endpoints: opts.endpoints,
      onKeyChange: (e, k) => this.settle(e, k),
      ...(onResync !== undefined ? { onResync } : {}),
    });
    this.speculative = new PrefixIndex({ endpoints: opts.endpoints, capacityBlocks: 1 << 20 });
  }

  get mode(): IndexMode {
    return this.opts.mode;
  }

  /** The tokenizer and block size configured for `model`. */
  tokenizer(model: string): ModelTokenization | undefined {
    return this.models.get(model);
  }

  ensureEndpoints(n: number): void {
    this.events.ensureEndpoints(n);
    this.speculative.ensureEndpoints(n);
  }

  /** The request's token-block keys, or undefined when it cannot be tokenized here. */
  requestKeys(model: string, input: PromptInput | undefined): RequestKeys | undefined {
    if (input === undefined) return undefined;
    const m = this.models.get(model);
    if (m === undefined) return undefined;
    const t0 = this.nowMicros();
    let tracked: TrackedIds;
    try {
      if (input.kind === 'chat')
        tracked = m.tokenizer.encodeTracked(m.tokenizer.renderChat(input.messages as ChatMessageInput[], input.tools), false);
      else if (typeof input.prompt === 'string') tracked = m.tokenizer.encodeTracked(input.prompt, true);
      else if (Array.isArray(input.prompt) && input.prompt.every((x) => typeof x === 'number'))
        tracked = { ids: input.prompt as number[], text: '', stable: [] };
      else return undefined;
    } catch {
      // A template may reject a conversation (e.g. roles out of order); the engine will too.
      this.failures++;
      return undefined;
    }
    const ids = tracked.ids;
    // The engine always computes the last prompt token, so a hit never covers it: only the
    // blocks before it can be cache hits.
    const hittable = Math.min(this.opts.maxBlocks, Math.floor(Math.max(0, ids.length - 1) / m.blockSize));
    const keys = this.keysWithMemo(model, m.blockSize, tracked, hittable);
    const micros = this.nowMicros() - t0;
    this.costRequests++;
    this.costTotal += micros;
    if (micros > this.costMax) this.costMax = micros;
    if (this.costSeconds !== undefined) {
      let cell = this.costCells.get(model);
      if (cell === undefined) this.costCells.set(model, (cell = this.costSeconds.cell(model)));
      this.costSeconds.observe(cell, micros / 1e6);
    }
    return { keys, tokens: ids.length, micros };
  }

  /**
   * Block keys of `tracked.ids`, reusing those of a cached text prefix (a repeated system
   * prompt, earlier turns, a completions prompt's shared start) from a small LRU keyed by
   * that prefix: only blocks past it are hashed. The longest cached prefix with a memo wins;
   * the longest one gets a memo when it had none.
   */
  private keysWithMemo(model: string, bs: number, tracked: TrackedIds, count: number): BlockHashes {
    const st = tracked.stable;
    const top = st.length - 2;
    const topBlocks = top < 0 ? 0 : Math.min(count, Math.floor(st[top + 1]! / bs));
    if (topBlocks === 0) return this.hasher.hash(model, tracked.ids, bs, count);
    let memo: KeyMemo | undefined;
    let memoAt = -1;
    for (let p = st.length - 2; p >= 0 && memo === undefined; p -= 2) {
      if (Math.min(count, Math.floor(st[p + 1]! / bs)) === 0) break;
      const m = this.keyMemo.get(memoKey(model, bs, st[p]!, st[p + 1]!, tracked.text));
      if (m !== undefined && m.text === prefix(tracked.text, st[p]!)) {
        memo = m;
        memoAt = p;
        this.keyMemo.delete(m.key);
        this.keyMemo.set(m.key, m);
      }
    }
    if (memo !== undefined) this.memoHits++;
    else this.memoMisses++;
    const lo = new Int32Array(count);
    const hi = new Int32Array(count);
    const from = memo === undefined ? 0 : Math.min(memo.count, count);
    let parent: bigint | undefined;
    if (memo !== undefined && from > 0) {
      lo.set(memo.lo.subarray(0, from));
      hi.set(memo.hi.subarray(0, from));
      parent = joinKey(lo[from - 1]!, hi[from - 1]!);
    }
    const rest = this.hasher.hash(model, from === 0 ? tracked.ids : tailFrom(tracked.ids, from * bs), bs, count - from, parent);
    lo.set(rest.lo, from);
    hi.set(rest.hi, from);
    if (memoAt !== top) {
      const key = memoKey(model, bs, st[top]!, st[top + 1]!, tracked.text);
      this.keyMemo.set(key, {
        key,
        text: ownString(prefix(tracked.text, st[top]!)),
        count: topBlocks,
        lo: lo.slice(0, topBlocks),
        hi: hi.slice(0, topBlocks),
      });
      if (this.keyMemo.size > MAX_KEY_MEMO) this.keyMemo.delete(this.keyMemo.keys().next().value as string);
    }
    return { count, lo, hi };
  }

  /**
   * Fractions in [0,1] per endpoint index into `out`: how much of the request each endpoint
   * is believed to hold (see the header). `approx(e)` is the approximate fraction.
   */
  fractions(keys: BlockHashes, nowMs: number, approx: (e: number) => number, out: Float64Array): void {
    this.expire(nowMs);
    const total = keys.count;
    const n = out.length;
    if (total === 0) {
      out.fill(0);
      return;
    }
    const precise = this.events.match(keys);
    for (let e = 0; e < n; e++) {
      let f = (precise[e] ?? 0) / total;
      if (!this.trusted(e, nowMs)) f = Math.max(f, approx(e));
      out[e] = f;
    }
    if (this.opts.mode === 'hybrid') {
      const spec = this.speculative.match(keys);
      for (let e = 0; e < n; e++) out[e] = Math.max(out[e]!, (spec[e] ?? 0) / total);
    }
  }

  /** Whether endpoint `e`'s precise entries are complete (its feed is in sync). */
  trusted(e: number, nowMs: number): boolean {
    const st = this.events.state(e);
    if (st === 'synced') return true;
    if (st === 'resyncing' && nowMs - this.events.resyncAtMs(e) >= this.opts.resyncWindowMs) {
      this.events.markSynced(e);
      return true;
    }
    return false;
  }

  /** A routing decision: in hybrid mode the chosen endpoint speculatively holds the request's blocks. */
  onRouted(e: number, keys: BlockHashes, nowMs: number): void {
    if (this.opts.mode !== 'hybrid' || keys.count === 0) return;
    this.speculative.insert(e, keys);
    this.expiry.push({ e, keys, expiresMs: nowMs + this.opts.speculativeTtlMs });
    if (this.expiry.length - this.expiryHead > MAX_SPECULATIVE) this.expireOne();
  }

  /** The engine stored or evicted a block: a speculative entry for it is no longer needed. */
  settle(e: number, key: bigint): void {
    if (this.opts.mode !== 'hybrid') return;
    setKey(this.one.lo, this.one.hi, 0, key);
    this.speculative.removeBlocks(e, 0, this.one);
  }

  /** Endpoint removed or its feed reset: forget its speculative entries too. */
  dropSpeculative(e: number): void {
    if (e < this.speculative.endpointCount) this.speculative.evictEndpoint(e);
  }

  speculativeEntries(): number {
    return this.speculative.stats().entries;
  }

  cost(): TokenizationCost {
    return {
      requests: this.costRequests,
      totalMicros: this.costTotal,
      maxMicros: this.costMax,
      failures: this.failures,
      keyMemoHits: this.memoHits,
      keyMemoMisses: this.memoMisses,
    };
  }

  private expire(nowMs: number): void {
    while (this.expiryHead < this.expiry.length && this.expiry[this.expiryHead]!.expiresMs <= nowMs) this.expireOne();
  }

  private expireOne(): void {
    const s = this.expiry[this.expiryHead++]!;
    if (s.e < this.speculative.endpointCount) this.speculative.removeBlocks(s.e, 0, s.keys);
    if (this.expiryHead > 1024 && this.expiryHead * 2 > this.expiry.length) {
      this.expiry.splice(0, this.expiryHead);
      this.expiryHead = 0;
    }
  }
}
