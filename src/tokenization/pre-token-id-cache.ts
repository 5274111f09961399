/**
 * Token ids per pre-token, cached, for byte-level BPE tokenizers (GPT-2, Llama 3, Qwen and
 * the project's tiny models), so text never seen whole is still not run through the full
 * tokenizer pipeline word by word.
 *
 * Why this is exact: with no normalizer, such a tokenizer cuts each text section (the text
 * between added tokens) with its pre-tokenizer's regex, maps each pre-token's UTF-8 bytes to
 * characters and runs BPE on each pre-token on its own. So a section's ids are the
 * concatenation of its pre-tokens' ids, and a pre-token's ids depend only on the pre-token.
 * The regex here is the library's own instance (no copy that could drift). A pre-token seen
 * for the first time is encoded by the library on its own, which is the same thing only if
 * the regex cuts it into exactly itself; that is checked, and a section with a pre-token that
 * fails the check is left to the caller (whole-section encoding).
 *
 * Supported pipelines (anything else: `create` returns undefined and callers encode whole):
 * - `ByteLevel` with `use_regex` (the default) and no `add_prefix_space`: regex matches;
 * - `Sequence [Split { Regex, behavior Isolated, invert false }, ByteLevel { use_regex false }]`
 *   with no `add_prefix_space`: regex matches and the text between them.
 * Memory: at most `maxEntries` pre-tokens of at most `maxChars` characters; a full cache is
 * cleared (pre-tokens of a language repeat, so it refills with the common ones).
 */
import type { Tokenizer } from '@huggingface/tokenizers';
import type { IdBuffer } from './id-buffer.js';
import { ownString } from './own-string.js';

type SplitMode = 'matches' | 'isolated';

export interface PreTokenIdCacheOptions {
  /** Pre-tokens kept; default 200,000. */
  readonly maxEntries?: number;
  /** Longer pre-tokens are encoded every time; default 48. */
  readonly maxChars?: number;
}

export interface PreTokenCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly entries: number;
}

interface LibraryInternals {
  readonly normalizer?: unknown;
  readonly remove_space?: unknown;
  readonly do_lowercase_and_remove_accent?: unknown;
  readonly pre_tokenizer?: { readonly pattern?: unknown; readonly tokenizers?: readonly ({ readonly pattern?: unknown } | null)[] } | null;
}

export class PreTokenIdCache {
  private readonly ids = new Map<string, readonly number[]>();
  private readonly maxEntries: number;
  private readonly maxChars: number;
  private hits = 0;
  private misses = 0;

  private constructor(
    private readonly tokenizer: Tokenizer,
    private readonly pattern: RegExp,
    private readonly mode: SplitMode,
    opts: PreTokenIdCacheOptions,
  ) {
    this.maxEntries = opts.maxEntries ?? 200_000;
    this.maxChars = opts.maxChars ?? 48;
  }

  /** The cache for `tokenizer` (built from `tokenizerJson`), or undefined when its pipeline is not one of the supported shapes. */
  static create(
    tokenizer: Tokenizer,
    tokenizerJson: Record<string, unknown>,
    opts: PreTokenIdCacheOptions = {},
  ): PreTokenIdCache | undefined {
    const lib = tokenizer as unknown as LibraryInternals;
    if (tokenizerJson['normalizer'] != null || lib.normalizer != null) return undefined;
    if (lib.remove_space === true || lib.do_lowercase_and_remove_accent === true) return undefined;
    const model = tokenizerJson['model'] as Record<string, unknown> | undefined;
    if (model?.['type'] !== 'BPE') return undefined;
    const pre = tokenizerJson['pre_tokenizer'] as Record<string, unknown> | null | undefined;
    if (pre == null || lib.pre_tokenizer == null) return undefined;
    if (isByteLevel(pre, true)) {
      const p = lib.pre_tokenizer.pattern;
      return p instanceof RegExp && p.global ? new PreTokenIdCache(tokenizer, p, 'matches', opts) : undefined;
    }
    const steps =
      pre['type'] === 'Sequence' && Array.isArray(pre['pretokenizers']) ? (pre['pretokenizers'] as Record<string, unknown>[]) : [];
    if (steps.length !== 2) return undefined;
    const [split, byteLevel] = steps as [Record<string, unknown>, Record<string, unknown>];
    const splitPattern = split['pattern'] as Record<string, unknown> | undefined;
    const isolated =
      split['type'] === 'Split' &&
      typeof splitPattern?.['Regex'] === 'string' &&
      split['invert'] === false &&
      String(split['behavior']).toLowerCase() === 'isolated';
    if (!isolated || !isByteLevel(byteLevel, false)) return undefined;
    const p = lib.pre_tokenizer.tokenizers?.[0]?.pattern;
    return p instanceof RegExp && p.global ? new PreTokenIdCache(tokenizer, p, 'isolated', opts) : undefined;
  }

  /** The pre-tokenizer's regex (the library's instance: do not change its state between calls). */
  get regex(): RegExp {
    return this.pattern;
  }

  /** Whether the regex's matches are the pre-tokens (else the text between matches is too). */
  get matchesOnly(): boolean {
    return this.mode === 'matches';
  }

  /**
   * Appends the ids of `section` (text containing no added token) to `out` and returns true,
   * or returns false with `out` unchanged when a pre-token could not be encoded on its own.
   * With `cuts`, pre-token starts where the text goes from an ASCII letter to a space, at
   * least `cuts.spacing` characters apart, are recorded as (chars, ids) pairs relative to the
   * section start (prefix-resume-cache.ts says why those are safe places to resume from).
   */
  encodeSection(section: string, out: IdBuffer, cuts?: CutRecorder): boolean {
    const start = out.length;
    const re = this.pattern;
    re.lastIndex = 0;
    let prev = 0;
    let nextCut = cuts === undefined ? Infinity : cuts.spacing;
    for (let m = re.exec(section); m !== null; m = re.exec(section)) {
      const at = m.index;
      const len = m[0].length;
      if (len === 0) {
        re.lastIndex = at + 1;
        continue;
      }
      if (at >= nextCut && section.charCodeAt(at) === 32 && isAsciiLetter(section.charCodeAt(at - 1))) {
        cuts!.points.push(cuts!.chars + at, cuts!.ids + out.length - start);
        nextCut = at + cuts!.spacing;
      }
      if (this.mode === 'isolated' && prev < at && !this.append(section.slice(prev, at), out)) return this.undo(out, start);
      if (!this.append(m[0], out)) return this.undo(out, start);
      prev = at + len;
      re.lastIndex = prev;
    }
    if (this.mode === 'isolated' && prev < section.length && !this.append(section.slice(prev), out)) return this.undo(out, start);
    return true;
  }

  stats(): PreTokenCacheStats {
    return { hits: this.hits, misses: this.misses, entries: this.ids.size };
  }

  private append(pre: string, out: IdBuffer): boolean {
    const hit = this.ids.get(pre);
    if (hit !== undefined) {
      this.hits++;
      out.pushAll(hit);
      return true;
    }
    this.misses++;
    if (!this.cutsToItself(pre)) return false;
    const ids = this.tokenizer.encode(pre, { add_special_tokens: false }).ids;
    if (pre.length <= this.maxChars) {
      if (this.ids.size >= this.maxEntries) this.ids.clear();
      this.ids.set(ownString(pre), ids);
    }
    out.pushAll(ids);
    return true;
  }

  /** Whether the pre-tokenizer, given `pre` alone, yields exactly `pre`. */
  private cutsToItself(pre: string): boolean {
    const re = this.pattern;
    const saved = re.lastIndex;
    re.lastIndex = 0;
    const m = re.exec(pre);
    re.lastIndex = saved;
    if (this.mode === 'matches') return m !== null && m.index === 0 && m[0].length === pre.length;
    // Isolated: a match covering all of it, or (text between matches) no match at all.
    return m === null || (m.index === 0 && m[0].length === pre.length);
  }

  private undo(out: IdBuffer, start: number): boolean {
    out.length = start;
    return false;
  }
}

/** Where `encodeSection` records resumable positions; `chars` and `ids` offset what it records. */
export interface CutRecorder {
  readonly spacing: number;
  readonly chars: number;
  readonly ids: number;
  /** Flat (chars, ids) pairs, ascending. */
  readonly points: number[];
}

function isAsciiLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isByteLevel(p: Record<string, unknown>, regex: boolean): boolean {
  return p['type'] === 'ByteLevel' && p['add_prefix_space'] !== true && (regex ? p['use_regex'] !== false : p['use_regex'] === false);
}
