/**
 * Chained 64-bit keys of token-id blocks: block i's key is xxHash64 of its token ids
 * (little-endian uint32 each) seeded with block i-1's key, and block 0 is seeded with the
 * model's key. So, like the engine's own block hashes, a key names the whole token prefix
 * up to and including its block, and two models never share keys.
 *
 * Why not the engine's hashes: vLLM's are sha256 over a pickled tuple (and may be salted);
 * the events carry the token ids, so the router keys both sides (requests and events) with
 * one cheap hash of its own. xxHash64 comes from `xxhash-wasm` (WebAssembly, loaded once).
 *
 * Results use the prefix index's BlockHashes layout (lo/hi int32 halves).
 */
import xxhash, { type XXHashAPI } from 'xxhash-wasm';
import { RouterError } from '../core/errors.js';
import type { BlockHashes } from '../prefix-cache/block-hasher.js';

let api: Promise<XXHashAPI> | undefined;

/** xxHash64, instantiated once per process. */
export function loadXxhash(): Promise<XXHashAPI> {
  api ??= xxhash();
  return api;
}

const MASK32 = 0xffffffffn;

export class TokenBlockHasher {
  private buf = new Uint32Array(1024);
  private readonly seeds = new Map<string, bigint>();

  constructor(private readonly xx: XXHashAPI) {}

  /** The chain seed of `model` (block 0's parent). */
  modelSeed(model: string): bigint {
    let s = this.seeds.get(model);
    if (s === undefined) {
      s = this.xx.h64(`cacheroute-model:${model}`);
      if (this.seeds.size > 1024) this.seeds.clear();
      this.seeds.set(model, s);
    }
    return s;
  }

  /** Key of one block of `blockSize` ids at `tokens[start..]` whose parent key is `parent`. */
  blockKey(parent: bigint, tokens: ArrayLike<number>, start: number, blockSize: number): bigint {
    if (this.buf.length < blockSize) this.buf = new Uint32Array(blockSize);
    const b = this.buf;
    for (let i = 0; i < blockSize; i++) b[i] = tokens[start + i]! >>> 0;
    return this.xx.h64Raw(new Uint8Array(b.buffer, 0, blockSize * 4), parent);
  }

  /**
   * Keys of the first min(maxBlocks, ⌊len/blockSize⌋) full blocks of `tokens`, chained from
   * `seed` (default: the model's seed). A fresh result each call.
   */
  hash(model: string, tokens: ArrayLike<number>, blockSize: number, maxBlocks = Number.MAX_SAFE_INTEGER, seed?: bigint): BlockHashes {
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new RouterError('BAD_CONFIG', `block size must be a positive integer, got ${blockSize}`);
    const n = Math.min(maxBlocks, Math.floor(tokens.length / blockSize));
    const lo = new Int32Array(n);
    const hi = new Int32Array(n);
    let parent = seed ?? this.modelSeed(model);
    for (let i = 0; i < n; i++) {
      parent = this.blockKey(parent, tokens, i * blockSize, blockSize);
      setKey(lo, hi, i, parent);
    }
    return { count: n, lo, hi };
  }
}

/** Stores a 64-bit key as the index's two int32 halves. */
export function setKey(lo: Int32Array, hi: Int32Array, i: number, k: bigint): void {
  lo[i] = Number(k & MASK32) | 0;
  hi[i] = Number((k >> 32n) & MASK32) | 0;
}

export async function createTokenBlockHasher(): Promise<TokenBlockHasher> {
  return new TokenBlockHasher(await loadXxhash());
}
