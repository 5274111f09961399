/**
 * Token ids of a long text section that starts like one seen before (a completions prompt
 * with a shared document or instructions and a new question; a tool result that grew): the
 * ids of the shared start are taken from the earlier section and only the rest is tokenized.
 *
 * Why the piece cache alone does not do it: it keys whole sections (the text between added
 * tokens), and a completions prompt holds no added tokens, so every new prompt is a miss and
 * is tokenized in full, shared start included.
 *
 * Why it is exact, and only for the GPT-2 pre-tokenizer regex (`'s|'t|'re|'ve|'m|'ll|'d|
 * ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, no normalizer, ByteLevel BPE: see
 * pre-token-id-cache.ts for why such a section's ids are its pre-tokens' ids): take a position
 * k where the text has an ASCII letter at k-1 and a space at k. No alternative can consume a
 * letter followed by a space (letter runs stop at the space, the space is only ever a leading
 * optional character, contractions are an apostrophe and letters, the other classes exclude
 * letters), and every character is matched by some alternative, so a pre-token ends at k in
 * any text with those two characters there. No match attempt starting before k reads past k:
 * to read index k+1 it would have to consume the letter and the space. So the pre-tokens
 * before k depend only on text[0..k], and those from k on only on text[k..] (no lookbehind or
 * anchors). Two sections equal up to and including index k therefore share the ids of
 * text[0..k), and the rest is the encoding of text.slice(k) on its own. The property test
 * (test/unit/tokenization) checks resumed ids against the library's whole-text encoding.
 *
 * Entries: per section start (its first 256 characters), the latest long section seen that
 * added at least `minChars` past where it resumed, with its ids and its cut positions (one
 * every `spacing` characters at most), LRU-bounded in characters. A lookup compares the new
 * section with the stored one chunk by chunk.
 */
import type { IdBuffer } from './id-buffer.js';
import { ownString } from './own-string.js';
import type { PreTokenIdCache } from './pre-token-id-cache.js';

const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

export interface PrefixResumeOptions {
  /** Sections shorter than this are not resumed or stored; default 1,024 characters. */
  readonly minChars?: number;
  /** Characters of stored section text (LRU); default 4,000,000. */
  readonly maxChars?: number;
  /** Minimum distance between recorded cut positions; default 256 characters. */
  readonly spacing?: number;
}

export interface PrefixResumeStats {
  readonly resumed: number;
  /** Characters whose ids came from a stored section. */
  readonly resumedChars: number;
  readonly entries: number;
}

interface Entry {
  readonly key: string;
  readonly text: string;
  readonly ids: Uint32Array;
  /** Flat (chars, ids) pairs, ascending. */
  readonly cuts: Int32Array;
}

const KEY_CHARS = 256;

export class PrefixResumeCache {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;
  private resumed = 0;
  private resumedChars = 0;
  private readonly minChars: number;
  private readonly maxChars: number;
  private readonly spacing: number;

  private constructor(
    private readonly preTokens: PreTokenIdCache,
    opts: PrefixResumeOptions,
  ) {
    this.minChars = Math.max(KEY_CHARS, opts.minChars ?? 1024);
    this.maxChars = opts.maxChars ?? 4_000_000;
    this.spacing = opts.spacing ?? 256;
  }

  /** The cache for a tokenizer whose pre-tokens come from the GPT-2 regex, else undefined. */
  static create(preTokens: PreTokenIdCache | undefined, opts: PrefixResumeOptions = {}): PrefixResumeCache | undefined {
    if (preTokens === undefined || !preTokens.matchesOnly) return undefined;
    const re = preTokens.regex;
    return re.source === GPT2_PATTERN && re.flags === 'gu' ? new PrefixResumeCache(preTokens, opts) : undefined;
  }

  /**
   * Appends the ids of `section` (text holding no added token) to `out`. Returns how many of
   * its leading characters had their ids taken from a stored section (0: none), and `out`'s
   * length right after those ids; or undefined when the section is not handled here (too
   * short, or a pre-token the pre-token cache cannot encode on its own: `out` unchanged) and
   * the caller encodes it.
   */
  encode(section: string, out: IdBuffer): { readonly chars: number; readonly ids: number } | undefined {
    if (section.length < this.minChars) return undefined;
    const start = out.length;
    const key = section.slice(0, KEY_CHARS);
    const prev = this.entries.get(key);
    const points: number[] = [];
    let from = 0;
    let fromIds = 0;
    if (prev !== undefined) {
      const d = commonPrefixLength(section, prev.text);
      // The last cut k with k < d: text[0..k] equal in both.
      const cuts = prev.cuts;
      let j = -1;
      for (let lo = 0, hi = cuts.length / 2 - 1; lo <= hi; ) {
        const mid = (lo + hi) >> 1;
        if (cuts[2 * mid]! < d) {
          j = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (j >= 0) {
        from = cuts[2 * j]!;
        fromIds = cuts[2 * j + 1]!;
        out.pushAll(prev.ids.subarray(0, fromIds));
        for (let i = 0; i <= 2 * j + 1; i++) points.push(cuts[i]!);
      }
    }
    const ok = this.preTokens.encodeSection(from === 0 ? section : section.slice(from), out, {
      spacing: this.spacing,
      chars: from,
      ids: fromIds,
      points,
    });
    if (!ok) {
      out.length = start;
      return undefined;
    }
    if (from > 0) {
      this.resumed++;
      this.resumedChars += from;
    }
    // Kept when it adds at least `minChars` past the resume point (a grown prompt); a new
    // question after a known document leaves the stored section as good a start as before,
    // and storing every request's copy would keep ~2 bytes per character alive each time.
    if (section.length - from >= this.minChars) this.store(key, section, out.copy(start), points);
    return { chars: from, ids: start + fromIds };
  }

  stats(): PrefixResumeStats {
    return { resumed: this.resumed, resumedChars: this.resumedChars, entries: this.entries.size };
  }

  private store(key: string, section: string, ids: Uint32Array, points: number[]): void {
    if (points.length === 0 || section.length > this.maxChars) return;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.chars -= old.text.length;
    }
    const own = ownString(key);
    this.entries.set(own, { key: own, text: ownString(section), ids, cuts: Int32Array.from(points) });
    this.chars += section.length;
    while (this.chars > this.maxChars) {
      const oldest = this.entries.values().next().value as Entry;
      this.entries.delete(oldest.key);
      this.chars -= oldest.text.length;
    }
  }
}

/** Length of the common prefix of `a` and `b` (compared in chunks, then per code unit). */
export function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let at = 0;
  let step = 4096;
  while (at < n) {
    const end = Math.min(n, at + step);
    if (a.slice(at, end) === b.slice(at, end)) at = end;
    else if (step > 64) step >>= 3;
    else {
      while (at < end && a.charCodeAt(at) === b.charCodeAt(at)) at++;
      return at;
    }
  }
  return at;
}
