/**
 * Chained 64-bit keys of token-id blocks for KV-event matching: the router's one block hash
 * (src/prefix-cache/block-hasher.ts: `modelKey`, `tokenBlockKey`, `chainTokenBlocks` —
 * XXH64 of the ids as little-endian uint32, seeded with the parent block's key, the first
 * block with the model's key). So, like the engine's own block hashes, a key names the whole
 * token prefix up to and including its block, and two models never share keys.
 *
 * Why not the engine's hashes: vLLM's are sha256 over a pickled tuple (and may be salted);
 * the events carry the token ids, so the router keys both sides (requests and events) with
 * its own hash. This class adapts those functions to what the precise index needs (a key
 * per event block, request keys capped at a block count, a chain resumed from a known key).
 */
import { RouterError } from '../core/errors.js';
import { chainTokenBlocks, modelKey, tokenBlockKey, type BlockHashes } from '../prefix-cache/block-hasher.js';

const MASK32 = 0xffffffffn;

export class TokenBlockHasher {
  private readonly seeds = new Map<string, bigint>();

  /** The chain seed of `model` (block 0's parent). */
  modelSeed(model: string): bigint {
    let s = this.seeds.get(model);
    if (s === undefined) {
      s = modelKey(model);
      if (this.seeds.size > 1024) this.seeds.clear();
      this.seeds.set(model, s);
    }
    return s;
  }

  /** Key of one block of `blockSize` ids at `tokens[start..]` whose parent key is `parent`. */
  blockKey(parent: bigint, tokens: Uint32Array | readonly number[], start: number, blockSize: number): bigint {
    return tokenBlockKey(
      parent,
      tokens instanceof Uint32Array ? tokens.subarray(start, start + blockSize) : tokens.slice(start, start + blockSize),
    );
  }

  /**
   * Keys of the first min(maxBlocks, ⌊len/blockSize⌋) full blocks of `tokens`, chained from
   * `seed` (default: the model's seed). A fresh result each call.
   */
  hash(
    model: string,
    tokens: Uint32Array | readonly number[],
    blockSize: number,
    maxBlocks = Number.MAX_SAFE_INTEGER,
    seed?: bigint,
  ): BlockHashes {
    if (!Number.isInteger(blockSize) || blockSize < 1)
      throw new RouterError('BAD_CONFIG', `block size must be a positive integer, got ${blockSize}`);
    const n = Math.min(maxBlocks, Math.floor(tokens.length / blockSize));
    const head =
      n * blockSize === tokens.length
        ? tokens
        : tokens instanceof Uint32Array
          ? tokens.subarray(0, n * blockSize)
          : tokens.slice(0, n * blockSize);
    return chainTokenBlocks(model, head, blockSize, seed ?? this.modelSeed(model));
  }
}

/** Stores a 64-bit key as the index's two int32 halves. */
export function setKey(lo: Int32Array, hi: Int32Array, i: number, k: bigint): void {
  lo[i] = Number(k & MASK32) | 0;
  hi[i] = Number((k >> 32n) & MASK32) | 0;
}

/** The hasher (async for callers written before the hash loaded synchronously). */
export async function createTokenBlockHasher(): Promise<TokenBlockHasher> {
  return new TokenBlockHasher();
}
