/**
 * Small 32-bit integer mixing helpers shared by the block hasher and the hash ring.
 *
 * Why hand-written: the hot path must stay in 32-bit integer arithmetic (Math.imul, shifts)
 * so V8 keeps everything as untagged int32; BigInt or a crypto hash would cost 10-100x more
 * and we need neither adversarial resistance nor portability of the values across versions.
 * The finaliser is the well-known murmur3 `fmix32` avalanche step.
 */

/** murmur3's final avalanche: every input bit affects every output bit. Returns int32. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

/** Rotate a 32-bit value left by r (0 < r < 32). */
export function rotl32(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/**
 * Hashes a short string (model names, endpoint ids) to an int32 with the given seed.
 * Not for long text: the block hasher has the fast path for that.
 */
export function hashString32(s: string, seed: number): number {
  let h = seed | 0;
  for (let i = 0; i < s.length; i++) {
    let k = Math.imul(s.charCodeAt(i), 0xcc9e2d51);
    k = rotl32(k, 15);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = rotl32(h, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  return fmix32(h ^ s.length);
}
