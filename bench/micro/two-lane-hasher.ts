/**
 * The block hasher as it was before the single-state rewrite (commit e048632), kept only so
 * the hash benchmark can time old and new side by side in the same process: two
 * independent 32-bit lanes (xor-multiply-xorshift and add-multiply-xorshift), four stripes
 * each, over UTF-16LE int32 words. Same block semantics, different key values. Not used by
 * the router.
 */
import { fmix32, hashString32, rotl32 } from '../../src/prefix-cache/mix32.js';
import type { BlockHashes } from '../../src/prefix-cache/block-hasher.js';

const SEED_A = 0x2545f491;
const SEED_B = 0x6c8e9cf5;
// Lane multipliers (odd, high-entropy constants: golden ratio and murmur3's).
const MUL_A = 0x9e3779b1 | 0;
const MUL_B = 0x85ebca77 | 0;

export class TwoLaneBlockHasher {
  readonly blockChars: number;
  readonly maxBlocks: number;
  private readonly wordsPerBlock: number;
  private readonly bytes: Buffer;
  private readonly words: Int32Array;
  private readonly units: Uint16Array;
  private readonly out: { count: number; lo: Int32Array; hi: Int32Array };
  private lastModel: string | undefined;
  private modelA = 0;
  private modelB = 0;

  constructor(blockChars: number, maxBlocks: number) {
    this.blockChars = blockChars;
    this.maxBlocks = maxBlocks;
    this.wordsPerBlock = blockChars / 2;
    const byteLen = Math.max(4, blockChars * maxBlocks * 2);
    const ab = new ArrayBuffer(byteLen);
    this.bytes = Buffer.from(ab);
    this.words = new Int32Array(ab, 0, byteLen >>> 2);
    this.units = new Uint16Array(ab, 0, byteLen >>> 1);
    this.out = { count: 0, lo: new Int32Array(maxBlocks), hi: new Int32Array(maxBlocks) };
  }

  blockCount(prefixLength: number): number {
    return Math.min(Math.floor(prefixLength / this.blockChars), this.maxBlocks);
  }

  /**
   * Chained hashes of the full blocks of `prefix` (at most maxBlocks), seeded by `model`.
   * The result is overwritten by the next call.
   */
  hash(model: string, prefix: string): BlockHashes {
    const out = this.out;
    const n = this.blockCount(prefix.length);
    out.count = n;
    if (n === 0) return out;

    const units = n * this.blockChars;
    const written = this.bytes.write(prefix, 0, units * 2, 'utf16le') >>> 1;
    // Should Buffer.write stop short (an encoder may refuse to split a surrogate pair at the
    // limit), copy the remaining units by hand so no stale bytes are hashed.
    for (let u = written; u < units; u++) this.units[u] = prefix.charCodeAt(u);

    if (model !== this.lastModel) {
      this.lastModel = model;
      this.modelA = hashString32(model, SEED_A);
      this.modelB = hashString32(model, SEED_B);
    }
    let pa = this.modelA;
    let pb = this.modelB;
    const w = this.words;
    const wpb = this.wordsPerBlock;
    const striped = wpb - (wpb & 3);
    const lo = out.lo;
    const hi = out.hi;
    for (let blk = 0; blk < n; blk++) {
      const start = blk * wpb;
      const stripeEnd = start + striped;
      const end = start + wpb;
      let a0 = pa;
      let a1 = pa ^ 0x5bd1e995;
      let a2 = (pa + 0x1b873593) | 0;
      let a3 = pa ^ 0x68e31da4;
      let b0 = pb;
      let b1 = pb ^ 0x27d4eb2f;
      let b2 = (pb + 0x3c6ef372) | 0;
      let b3 = pb ^ 0x165667b1;
      let j = start;
      for (; j < stripeEnd; j += 4) {
        const w0 = w[j]!;
        const w1 = w[j + 1]!;
        const w2 = w[j + 2]!;
        const w3 = w[j + 3]!;
        a0 = Math.imul(a0 ^ w0, MUL_A);
        a0 ^= a0 >>> 15;
        a1 = Math.imul(a1 ^ w1, MUL_A);
        a1 ^= a1 >>> 15;
        a2 = Math.imul(a2 ^ w2, MUL_A);
        a2 ^= a2 >>> 15;
        a3 = Math.imul(a3 ^ w3, MUL_A);
        a3 ^= a3 >>> 15;
        b0 = Math.imul((b0 + w0) | 0, MUL_B);
        b0 ^= b0 >>> 13;
        b1 = Math.imul((b1 + w1) | 0, MUL_B);
        b1 ^= b1 >>> 13;
        b2 = Math.imul((b2 + w2) | 0, MUL_B);
        b2 ^= b2 >>> 13;
        b3 = Math.imul((b3 + w3) | 0, MUL_B);
        b3 ^= b3 >>> 13;
      }
      for (; j < end; j++) {
        const wj = w[j]!;
        a0 = Math.imul(a0 ^ wj, MUL_A);
        a0 ^= a0 >>> 15;
        b0 = Math.imul((b0 + wj) | 0, MUL_B);
        b0 ^= b0 >>> 13;
      }
      const a = (rotl32(a0, 1) + rotl32(a1, 7) + rotl32(a2, 12) + rotl32(a3, 18)) | 0;
      const b = (rotl32(b0, 3) + rotl32(b1, 11) + rotl32(b2, 19) + rotl32(b3, 27)) | 0;
      pa = fmix32(a ^ wpb);
      pb = fmix32(Math.imul(b, 0x27d4eb2f) ^ wpb);
      lo[blk] = pa;
      hi[blk] = pb;
    }
    return out;
  }
}
