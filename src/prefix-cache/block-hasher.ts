/**
 * Cuts a prompt prefix into fixed-size character blocks and gives each block a chained
 * 64-bit hash, so that "block i matches" implies "the whole prefix up to block i matches"
 * (a hashed radix tree: the chain value of block i names the path from the root).
 *
 * Design choices and why:
 * - Blocks are `blockChars` UTF-16 code units (default 64 ≈ 16 tokens, one vLLM KV block
 *   at ~4 chars/token). Only full blocks count: the engine only caches full blocks too.
 * - The first block's state is seeded from the model name, so two models never share
 *   entries even with identical prompts (they never share KV cache either).
 * - One 128-bit state per block (four 32-bit stripes fed round-robin, as in xxHash, so the
 *   CPU overlaps the multiply latencies), each word folded in by xor → multiply by an odd
 *   constant → xorshift. The 64-bit key is read out of that state by two *different*
 *   finalisers (a rotate-and-add combination and a multiply-and-xor combination, each
 *   ending in murmur3's fmix32 avalanche). This costs half the per-word work of the
 *   previous design (two independent 32-bit lanes, each with its own four stripes).
 *   Collision argument: each stripe step is a bijection of the stripe for a fixed word and
 *   of the word for a fixed stripe, so two blocks with the same chain seed that differ in
 *   exactly one word end with states differing in exactly one stripe, and the first
 *   finaliser's sum then differs (rotation is a bijection) — such a pair never collides.
 *   Beyond that the mix behaves like a random function (tests: no collision among 10^6
 *   distinct blocks, per-bit avalanche of both key halves near ½); a collision would only
 *   misjudge cache affinity for one request, and no adversarial resistance is needed.
 * - Narrow blocks: a block whose code units all fit in one byte (latin1, which includes
 *   ASCII) is hashed as packed bytes, four characters per int32 word, instead of UTF-16 (two
 *   per word) — half the words again for the usual prompt; on this hardware the word loads
 *   are what hashing costs. Which encoding a block gets depends only on its own content
 *   (and the two are domain-separated in the finaliser), so the same text always gets the
 *   same key whatever the rest of the prompt holds. For the usual prompt, a V8 one-byte
 *   string, one latin1 copy is all the preparation: the regex "any code unit above 0xFF?"
 *   is answered in O(1) for such strings. A two-byte string (emoji, CJK, typographic
 *   quotes) is also written as UTF-16LE; blocks before its first wide character are narrow
 *   without a check, later ones are checked four words at a time. Needs `blockChars` to be
 *   a multiple of 4 (whole words per block); other sizes always hash UTF-16.
 * - The per-block loop runs as WebAssembly (wasm-block-kernel.ts) over the hasher's own
 *   buffer, which is the module's memory: no per-load bounds checks, no copies; ≈ 0.6× the
 *   time of the same loop in JavaScript, which stays as the fallback (no WebAssembly, e.g.
 *   --jitless) and as the reference the kernel is tested against.
 * - All int32 arithmetic (imul, shifts) on reused buffers: no BigInt, no allocation per call.
 *
 * The returned hashes live in buffers reused by the next `hash` call: consume them within
 * the scheduling cycle, or copy them with `copyBlockHashes`.
 */
import { RouterError } from '../core/errors.js';
import { fmix32, hashString32, rotl32 } from './mix32.js';
import { MIX, wasmBlockKernel, type HashBlocksKernel } from './wasm-block-kernel.js';

/** The chained block hashes of one prefix. Entry i is the 64-bit key (hi:lo) of block i. */
export interface BlockHashes {
  /** Number of valid full blocks. */
  readonly count: number;
  /** Low 32 bits of each block's hash, as int32. Valid for indices < count. */
  readonly lo: Int32Array;
  /** High 32 bits of each block's hash, as int32. Valid for indices < count. */
  readonly hi: Int32Array;
}

export interface BlockHasherOptions {
  /** Block size in characters (UTF-16 code units). Must be an even number ≥ 2. */
  readonly blockChars: number;
  /** At most this many leading blocks are hashed. */
  readonly maxBlocks: number;
  /** Run the inner loop as WebAssembly when available (default true; false = JavaScript). */
  readonly wasm?: boolean;
}

const SEED_LO = 0x2545f491;
const SEED_HI = 0x6c8e9cf5;
/** Finaliser tags: keep narrow (byte) and wide (UTF-16) encodings of a block apart. */
const TAG_NARROW = 0x4e000000;
const TAG_WIDE = 0x57000000;
/** A UTF-16LE word holding two latin1 code units has no bit of this mask set. */
const WIDE_PAIR = 0xff00ff00 | 0;
/** Finds a code unit that latin1 cannot represent (global: `lastIndex` gives its position). */
const ABOVE_LATIN1 = /[^\x00-\xff]/g;

export class BlockHasher {
  readonly blockChars: number;
  readonly maxBlocks: number;
  /** Whether latin1 blocks may be hashed as packed bytes (blockChars % 4 === 0). */
  private readonly narrowBlocks: boolean;
  /**
   * One buffer (WebAssembly memory when the kernel runs): bytes [0, unitCap) one byte per
   * code unit; [2·unitCap, 4·unitCap) UTF-16LE; then the key halves, lo and hi.
   */
  private readonly bytes: Buffer;
  private readonly words: Int32Array;
  private readonly units: Uint16Array;
  /** Int32 word / uint16 unit offset of the UTF-16LE region. */
  private readonly wideWordBase: number;
  private readonly wideUnitBase: number;
  /** Byte offsets of the lo / hi key arrays. */
  private readonly loAddr: number;
  private readonly hiAddr: number;
  private readonly kernel: HashBlocksKernel | undefined;
  private readonly out: { count: number; lo: Int32Array; hi: Int32Array };
  private lastModel: string | undefined;
  private modelLo = 0;
  private modelHi = 0;

  constructor(opts: BlockHasherOptions) {
    const { blockChars, maxBlocks } = opts;
    if (!Number.isInteger(blockChars) || blockChars < 2 || blockChars % 2 !== 0) {
      throw new RouterError('BAD_CONFIG', `cacheAware.blockChars must be an even integer >= 2, got ${blockChars}`);
    }
    if (!Number.isInteger(maxBlocks) || maxBlocks < 0) {
      throw new RouterError('BAD_CONFIG', `cacheAware.maxPrefixBlocks must be a non-negative integer, got ${maxBlocks}`);
    }
    this.blockChars = blockChars;
    this.maxBlocks = maxBlocks;
    this.narrowBlocks = blockChars % 4 === 0;
    // blockChars is even, so the UTF-16 region (from byte 2·unitCap) is int32 aligned.
    const unitCap = Math.max(2, blockChars * maxBlocks);
    this.loAddr = unitCap * 4;
    this.hiAddr = this.loAddr + maxBlocks * 4;
    const byteLen = this.hiAddr + maxBlocks * 4;
    const wasm = opts.wasm === false ? undefined : wasmBlockKernel(byteLen);
    const kernel = wasm?.kernel;
    const ab = wasm?.buffer ?? new ArrayBuffer(byteLen);
    this.kernel = kernel;
    this.bytes = Buffer.from(ab);
    this.words = new Int32Array(ab, 0, byteLen >>> 2);
    this.units = new Uint16Array(ab, 0, byteLen >>> 1);
    this.wideWordBase = unitCap >>> 1;
    this.wideUnitBase = unitCap;
    this.out = { count: 0, lo: new Int32Array(ab, this.loAddr, maxBlocks), hi: new Int32Array(ab, this.hiAddr, maxBlocks) };
  }

  /** Whether the inner loop runs as WebAssembly (else JavaScript). */
  get usesWasm(): boolean {
    return this.kernel !== undefined;
  }

  /** Number of full blocks `hash` would produce for a prefix of this length. */
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
    if (model !== this.lastModel) {
      this.lastModel = model;
      this.modelLo = hashString32(model, SEED_LO);
      this.modelHi = hashString32(model, SEED_HI);
    }
    const units = n * this.blockChars;
    const bc = this.blockChars;
    if (!this.narrowBlocks) {
      this.writeWide(prefix, units);
      this.run(this.wideWordBase, bc >>> 1, 0, n, TAG_WIDE, this.modelLo, this.modelHi);
      return out;
    }
    ABOVE_LATIN1.lastIndex = 0;
    const twoByte = ABOVE_LATIN1.test(prefix);
    const firstWide = twoByte ? ABOVE_LATIN1.lastIndex - 1 : units;
    ABOVE_LATIN1.lastIndex = 0;
    if (firstWide >= units) {
      this.bytes.write(prefix, 0, units, 'latin1');
      this.run(0, bc >>> 2, 0, n, TAG_NARROW, this.modelLo, this.modelHi);
      return out;
    }
    this.writeWide(prefix, units);
    // Runs of blocks of one kind are hashed in one call. The byte region gets the low byte
    // of every code unit (exact for narrow blocks, the only ones read from it) once a narrow
    // block turns up.
    const narrowWpb = bc >>> 2;
    const wideWpb = bc >>> 1;
    const sureNarrow = Math.floor(firstWide / bc);
    let latin1 = false;
    let blk = 0;
    let narrow = this.isNarrowBlock(0, sureNarrow);
    while (blk < n) {
      let end = blk + 1;
      let nextNarrow = false;
      while (end < n && (nextNarrow = this.isNarrowBlock(end, sureNarrow)) === narrow) end++;
      const seedLo = blk === 0 ? this.modelLo : out.lo[blk - 1]!;
      const seedHi = blk === 0 ? this.modelHi : out.hi[blk - 1]!;
      if (narrow) {
        if (!latin1) this.bytes.write(prefix, 0, units, 'latin1');
        latin1 = true;
        this.run(0, narrowWpb, blk, end, TAG_NARROW, seedLo, seedHi);
      } else {
        this.run(this.wideWordBase, wideWpb, blk, end, TAG_WIDE, seedLo, seedHi);
      }
      blk = end;
      narrow = nextNarrow;
    }
    return out;
  }

  /** Whether block `blk` is latin1 only (blocks below `sureNarrow` are, unchecked). */
  private isNarrowBlock(blk: number, sureNarrow: number): boolean {
    if (blk < sureNarrow) return true;
    const w = this.words;
    const wpb = this.blockChars >>> 1;
    const start = this.wideWordBase + blk * wpb;
    const end = start + wpb;
    const grouped = end - (wpb & 3);
    let j = start;
    // Four words per test: fewer branches, and a wide block usually fails in its first group.
    for (; j < grouped; j += 4) if (((w[j]! | w[j + 1]! | w[j + 2]! | w[j + 3]!) & WIDE_PAIR) !== 0) return false;
    for (; j < end; j++) if ((w[j]! & WIDE_PAIR) !== 0) return false;
    return true;
  }

  /** Hashes blocks from..to-1 (`wpb` words each, word `base` = block 0) into `out`. */
  private run(base: number, wpb: number, from: number, to: number, tag: number, seedLo: number, seedHi: number): void {
    if (this.kernel !== undefined) {
      this.kernel((base + from * wpb) * 4, wpb * 4, to - from, tag ^ wpb, seedLo, seedHi, this.loAddr + from * 4, this.hiAddr + from * 4, (wpb - (wpb & 3)) * 4);
    } else {
      hashBlocks(this.words, base, wpb, from, to, tag, seedLo, seedHi, this.out.lo, this.out.hi);
    }
  }

  /** Writes the first `units` code units of `prefix` as UTF-16LE into the wide region. */
  private writeWide(prefix: string, units: number): void {
    const base = this.wideUnitBase;
    const written = this.bytes.write(prefix, base * 2, units * 2, 'utf16le') >>> 1;
    // Should Buffer.write stop short (an encoder may refuse to split a surrogate pair at the
    // limit), copy the remaining units by hand so no stale bytes are hashed.
    for (let u = written; u < units; u++) this.units[base + u] = prefix.charCodeAt(u);
  }
}

/**
 * Hashes blocks `from..to-1`, block b being `wpb` int32 words at `base + b·wpb` of `w`;
 * block `from` is seeded with (seedLo, seedHi), each later one with its predecessor's key.
 * The reference implementation; wasm-block-kernel.ts runs the same steps.
 */
function hashBlocks(
  w: Int32Array, base: number, wpb: number, from: number, to: number, tag: number,
  seedLo: number, seedHi: number, lo: Int32Array, hi: Int32Array,
): void {
  const striped = wpb - (wpb & 3);
  const lenTag = tag ^ wpb;
  let pl = seedLo;
  let ph = seedHi;
  for (let blk = from; blk < to; blk++) {
    const start = base + blk * wpb;
    const stripeEnd = start + striped;
    const end = start + wpb;
    let a0 = pl;
    let a1 = ph;
    let a2 = pl ^ MIX.stripe2;
    let a3 = ph ^ MIX.stripe3;
    let j = start;
    for (; j < stripeEnd; j += 4) {
      a0 = Math.imul(a0 ^ w[j]!, MIX.mul);
      a0 ^= a0 >>> 15;
      a1 = Math.imul(a1 ^ w[j + 1]!, MIX.mul);
      a1 ^= a1 >>> 15;
      a2 = Math.imul(a2 ^ w[j + 2]!, MIX.mul);
      a2 ^= a2 >>> 15;
      a3 = Math.imul(a3 ^ w[j + 3]!, MIX.mul);
      a3 ^= a3 >>> 15;
    }
    for (; j < end; j++) {
      a0 = Math.imul(a0 ^ w[j]!, MIX.mul);
      a0 ^= a0 >>> 15;
    }
    // Two different read-outs of the 128-bit state: a rotate-and-add sum and a
    // multiply-and-xor combination, each avalanched.
    pl = fmix32(((rotl32(a0, 1) + rotl32(a1, 7) + rotl32(a2, 12) + rotl32(a3, 18)) | 0) ^ lenTag);
    ph = fmix32(((Math.imul(a0 ^ rotl32(a2, 16), MIX.hiMul0) + Math.imul(a1 ^ rotl32(a3, 16), MIX.hiMul1)) | 0) ^ lenTag);
    lo[blk] = pl;
    hi[blk] = ph;
  }
}

/** A private copy of `h` that later `hash` calls will not overwrite. */
export function copyBlockHashes(h: BlockHashes): BlockHashes {
  return { count: h.count, lo: h.lo.slice(0, h.count), hi: h.hi.slice(0, h.count) };
}
