/**
 * Chained KV-block hashes, like vLLM's prefix cache: block i's key is a hash of block
 * i-1's key and the block's token ids, so a key identifies the whole prefix up to and
 * including that block, and equal keys imply equal prefixes (up to hash collisions,
 * negligible at 53 bits for a simulator). Only full blocks get keys. An optional salt
 * (vLLM's per-request `cache_salt`) is folded into the first block's parent.
 */
import { fnv1a32 } from './tokenizer.js';

/** 53-bit hash (safe integer) of a parent key and tokens[start, end). */
export function hashBlock(parent: number, tokens: readonly number[], start: number, end: number): number {
  let h1 = 0xdeadbeef ^ (parent >>> 0);
  let h2 = 0x41c6ce57 ^ (Math.floor(parent / 4294967296) >>> 0);
  for (let i = start; i < end; i++) {
    const t = (tokens[i] ?? 0) >>> 0;
    h1 = Math.imul(h1 ^ t, 2654435761);
    h2 = Math.imul(h2 ^ t, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (0x1fffff & h2) + (h1 >>> 0);
}

/** Root parent key: 0 without a salt, otherwise derived from the salt text. */
export function rootKey(salt?: string): number {
  if (salt === undefined || salt === '') return 0;
  return hashBlock(fnv1a32(salt), [salt.length], 0, 1);
}

/** Keys of all full blocks of `tokens` (floor(len / blockSize) of them). */
export function blockHashes(tokens: readonly number[], blockSize: number, salt?: string): number[] {
  const n = Math.floor(tokens.length / blockSize);
  const out: number[] = new Array<number>(n);
  let parent = rootKey(salt);
  for (let b = 0; b < n; b++) {
    parent = hashBlock(parent, tokens, b * blockSize, (b + 1) * blockSize);
    out[b] = parent;
  }
  return out;
}
