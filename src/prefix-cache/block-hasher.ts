/**
 * Cuts a prompt prefix into fixed-size character blocks and gives each block a chained
 * 64-bit key, so that "block i matches" implies "the whole prefix up to block i matches"
 * (a hashed radix tree: the key of block i names the path from the root).
 *
 * The chain: key(block 0) = XXH64(block 0, seed = XXH64(model name)); key(block i) =
 * XXH64(block i, seed = key(block i-1)). Each block's key folds in the previous key, the
 * first one the model, so two models never share entries (they never share KV cache either).
 * This is the parent-hash chaining vLLM's prefix cache and llm-d's KV indexer use, so a key
 * can be computed from its parent's key and one block alone — which is what hashing the
 * token-id blocks of engine KV events needs (`tokenBlockKey`, `chainTokenBlocks`).
 *
 * Text blocks are `blockChars` UTF-16 code units (default 64 ≈ 16 tokens, one vLLM KV block
 * at ~4 chars/token), hashed as their UTF-16LE bytes, so a block's key depends on its own
 * code units only (a surrogate pair split by a boundary is hashed exactly, not replaced).
 * Only full blocks count: the engine only caches full blocks too. Token blocks are hashed as
 * the little-endian uint32 bytes of the token ids.
 *
 * A collision only misjudges cache affinity for one request; no adversarial resistance is
 * needed. The returned keys live in buffers reused by the next `hash` call: consume them
 * within the scheduling cycle, or copy them with `copyBlockHashes`.
 */
import { RouterError } from '../core/errors.js';
import { Xxh64Arena, xxh64String } from './xxhash.js';

/** The chained block keys of one prefix. Entry i is the 64-bit key (hi:lo) of block i. */
export interface BlockHashes {
  /** Number of valid full blocks. */
  readonly count: number;
  /** Low 32 bits of each block's key, as int32. Valid for indices < count. */
  readonly lo: Int32Array;
  /** High 32 bits of each block's key, as int32. Valid for indices < count. */
  readonly hi: Int32Array;
}

export interface BlockHasherOptions {
  /** Block size in characters (UTF-16 code units), an integer ≥ 1. */
  readonly blockChars: number;
  /** At most this many leading blocks are hashed. */
  readonly maxBlocks: number;
}

/** Splits 64-bit keys into int32 halves without BigInt arithmetic. */
const split64 = new BigUint64Array(1);
const split32 = new Int32Array(split64.buffer);

/** The chain's root for `model`: XXH64 of the model name's UTF-8 bytes, seed 0. */
export function modelKey(model: string): bigint {
  return xxh64String(model, 0n);
}

export class BlockHasher {
  readonly blockChars: number;
  readonly maxBlocks: number;
  /** UTF-16LE bytes of the prefix's leading blocks, in the hash module's memory. */
  private readonly arena: Xxh64Arena;
  private readonly out: { count: number; lo: Int32Array; hi: Int32Array };
  private lastModel: string | undefined;
  private lastModelKey = 0n;

  constructor(opts: BlockHasherOptions) {
    const { blockChars, maxBlocks } = opts;
    if (!Number.isInteger(blockChars) || blockChars < 1) {
      throw new RouterError('BAD_CONFIG', `blockChars must be a positive integer, got ${blockChars}`);
    }
    if (!Number.isInteger(maxBlocks) || maxBlocks < 0) {
      throw new RouterError('BAD_CONFIG', `maxPrefixBlocks must be a non-negative integer, got ${maxBlocks}`);
    }
    this.blockChars = blockChars;
    this.maxBlocks = maxBlocks;
    this.arena = new Xxh64Arena(blockChars * 2 * maxBlocks);
    this.out = { count: 0, lo: new Int32Array(maxBlocks), hi: new Int32Array(maxBlocks) };
  }

  /** Number of full blocks `hash` would produce for a prefix of this length. */
  blockCount(prefixLength: number): number {
    return Math.min(Math.floor(prefixLength / this.blockChars), this.maxBlocks);
  }

  /**
   * Chained keys of the full blocks of `prefix` (at most maxBlocks), rooted at `model`.
   * The result is overwritten by the next call.
   */
  hash(model: string, prefix: string): BlockHashes {
    const out = this.out;
    const n = this.blockCount(prefix.length);
    out.count = n;
    if (n === 0) return out;
    if (model !== this.lastModel) {
      this.lastModel = model;
      this.lastModelKey = modelKey(model);
    }
    this.writeUtf16(prefix, n * this.blockChars);
    const arena = this.arena;
    const blockBytes = this.blockChars * 2;
    const { lo, hi } = out;
    let key = this.lastModelKey;
    for (let b = 0; b < n; b++) {
      key = arena.hash(b * blockBytes, blockBytes, key);
      split64[0] = key;
      lo[b] = split32[0]!;
      hi[b] = split32[1]!;
    }
    return out;
  }

  /** Writes the first `units` code units of `prefix` as UTF-16LE into the arena. */
  private writeUtf16(prefix: string, units: number): void {
    const bytes = this.arena.bytes;
    const written = bytes.write(prefix, 0, units * 2, 'utf16le') >>> 1;
    // Should Buffer.write stop short (an encoder may refuse to split a surrogate pair at the
    // limit), write the remaining units by hand so no stale bytes are hashed.
    for (let u = written; u < units; u++) bytes.writeUInt16LE(prefix.charCodeAt(u), u * 2);
  }
}

/** A private copy of `h` that later `hash` calls will not overwrite. */
export function copyBlockHashes(h: BlockHashes): BlockHashes {
  return { count: h.count, lo: h.lo.slice(0, h.count), hi: h.hi.slice(0, h.count) };
}

let tokenArena: Xxh64Arena | undefined;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Writes `tokens` into the token arena as little-endian uint32 (growing it when needed) and
 * returns the arena. Throws BAD_REQUEST for an id that is not an integer in [0, 2^32).
 */
function writeTokens(tokens: Uint32Array | readonly number[]): Xxh64Arena {
  const n = tokens.length;
  if (tokenArena === undefined || tokenArena.capacity < n * 4) tokenArena = new Xxh64Arena(Math.max(4096, n * 8));
  const bytes = tokenArena.bytes;
  if (tokens instanceof Uint32Array && LITTLE_ENDIAN) {
    // The arena's bytes start at offset 0 of the module's memory: 4-byte aligned.
    new Uint32Array(bytes.buffer, bytes.byteOffset, n).set(tokens);
    return tokenArena;
  }
  for (let i = 0; i < n; i++) {
    const t = tokens[i]!;
    if (!Number.isInteger(t) || t < 0 || t > 0xffffffff)
      throw new RouterError('BAD_REQUEST', `token id ${t} at ${i} is not an integer in [0, 2^32)`);
    bytes.writeUInt32LE(t, i * 4);
  }
  return tokenArena;
}

/**
 * The key of one block of token ids whose parent block has key `parent` (for the first
 * block of a prompt, `modelKey(model)`): XXH64 of the ids as little-endian uint32, seed
 * `parent`, unsigned. Throws BAD_REQUEST for an id that is not an integer in [0, 2^32).
 */
export function tokenBlockKey(parent: bigint, tokens: Uint32Array | readonly number[]): bigint {
  return BigInt.asUintN(64, writeTokens(tokens).hash(0, tokens.length * 4, parent));
}

/**
 * Chained keys of the full `blockTokens`-sized blocks of `tokens`: the first block's parent
 * is `parent` if given, else `modelKey(model)`; each later block's parent is the block before.
 * A fresh result (not reused). The ids are written once and each block hashed in place.
 */
export function chainTokenBlocks(
  model: string,
  tokens: Uint32Array | readonly number[],
  blockTokens: number,
  parent?: bigint,
): BlockHashes {
  if (!Number.isInteger(blockTokens) || blockTokens < 1)
    throw new RouterError('BAD_CONFIG', `blockTokens must be a positive integer, got ${blockTokens}`);
  const count = Math.floor(tokens.length / blockTokens);
  const lo = new Int32Array(count);
  const hi = new Int32Array(count);
  if (count === 0) return { count, lo, hi };
  const whole = count * blockTokens;
  const arena = writeTokens(
    whole === tokens.length ? tokens : tokens instanceof Uint32Array ? tokens.subarray(0, whole) : tokens.slice(0, whole),
  );
  const blockBytes = blockTokens * 4;
  let key = parent ?? modelKey(model);
  for (let b = 0; b < count; b++) {
    // The module returns the bits signed; as a parent seed it is taken as the same 64 bits.
    key = BigInt.asUintN(64, arena.hash(b * blockBytes, blockBytes, key));
    split64[0] = key;
    lo[b] = split32[0]!;
    hi[b] = split32[1]!;
  }
  return { count, lo, hi };
}

/** The 64-bit key of block i of `h`, as an unsigned bigint (what `tokenBlockKey` takes as parent). */
export function blockKeyAt(h: BlockHashes, i: number): bigint {
  split32[0] = h.lo[i]!;
  split32[1] = h.hi[i]!;
  return split64[0]!;
}
