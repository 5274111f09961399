/**
 * Deterministic filler text with an exact token count.
 *
 * Why this shape: there is no tokenizer on this machine, and the simulated engines and
 * the router both estimate tokens cheaply. Every "token" here is three lowercase letters
 * followed by one space (4 characters), so a whitespace/word tokenizer and a
 * characters/4 estimate agree exactly. Equal keys give equal text, different keys give
 * text that differs from the first token on (with overwhelming probability), so prefix
 * sharing happens exactly where a generator intends it.
 */
import { seededRng } from '../../src/util/rng.js';

export const CHARS_PER_TOKEN = 4;

/** FNV-1a 32-bit hash of a string; used to turn text keys into seeds. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const A = 'a'.charCodeAt(0);

/** `count` tokens of text determined only by `key`. */
export function syntheticTokens(key: string, count: number): string {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`token count must be a non-negative integer, got ${count}`);
  const rng = seededRng(hashString(key));
  const codes = new Array<number>(count * CHARS_PER_TOKEN);
  for (let t = 0; t < count; t++) {
    const o = t * CHARS_PER_TOKEN;
    codes[o] = A + rng.int(26);
    codes[o + 1] = A + rng.int(26);
    codes[o + 2] = A + rng.int(26);
    codes[o + 3] = 32;
  }
  // Chunked to stay under the argument-count limit of fromCharCode.
  let out = '';
  for (let i = 0; i < codes.length; i += 8192) out += String.fromCharCode(...codes.slice(i, i + 8192));
  return out;
}

/** The first `count` tokens of a synthetic text. */
export function firstTokens(text: string, count: number): string {
  return text.slice(0, count * CHARS_PER_TOKEN);
}

/** Token count of synthetic text (whitespace-separated words). */
export function countTokens(text: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const ws = text.charCodeAt(i) <= 32;
    if (!ws && !inWord) n++;
    inWord = !ws;
  }
  return n;
}

/** Group id → that group's system prompt (`tokens` synthetic tokens), generated once per group. */
export function systemPrompts(salt: string, tokens: number): (group: number) => string {
  const cache = new Map<number, string>();
  return (g) => {
    let system = cache.get(g);
    if (system === undefined) {
      system = syntheticTokens(`${salt}/sys/${g}`, tokens);
      cache.set(g, system);
    }
    return system;
  };
}
