/**
 * A cheap 32-bit key for "which prefix is this": FNV-1a over the first `keyChars`
 * characters of the request's affinity prefix. Requests that share at least that many
 * leading characters (a system prompt, a conversation's first turns) share a key.
 *
 * Used by the hotspot filter, bounded-load hashing and traffic statistics, which need a
 * stable identity for a prefix group, not the block-by-block match of the prefix index.
 */

/** Returns undefined when the prefix is shorter than `minChars` (too little to group on). */
export function prefixKeyOf(prefix: string, keyChars: number, minChars = 1): number | undefined {
  if (prefix.length < minChars || prefix.length === 0) return undefined;
  const n = Math.min(prefix.length, keyChars);
  let h = 0x811c9dc5;
  for (let i = 0; i < n; i++) {
    h ^= prefix.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Mixes a prefix key with an endpoint id (rendezvous hashing weight), 32-bit. */
export function mixKey(key: number, endpointId: string): number {
  let h = (0x811c9dc5 ^ key) >>> 0;
  for (let i = 0; i < endpointId.length; i++) {
    h ^= endpointId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix32) so nearby ids do not give correlated weights.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
