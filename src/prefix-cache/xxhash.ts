/**
 * The router's one hash family: xxHash (XXH64 and XXH32) from the `xxhash-wasm` package.
 * Block keys (block-hasher.ts), the consistent-hash ring's points and the prefix-hash
 * picker's keys all come from here, so every hashed value in the router is a standard
 * xxHash that other tools can reproduce.
 *
 * Two ways in, one implementation: short strings go through the package's API; block
 * hashing, which makes one XXH64 call per 64-character block (512 per 32 KB prompt), runs
 * the package's own published WebAssembly module (`workerd/xxhash.wasm`, the build its
 * workerd entry loads) directly on an `Xxh64Arena`: the caller writes its bytes once into
 * the module's memory and hashes ranges of it. The API's wrapper would copy every block
 * into that memory again and allocate two BigInts per call, about three times the time
 * per prompt (docs/decisions/0201-block-hash-library.md). The exports used (`mem`, `xxh64`)
 * are that module's interface, so the package version is pinned exactly, and the reference
 * vectors in test/unit/prefix-cache/xxhash.test.ts check both ways in against each other.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import xxhash from 'xxhash-wasm';

const api = await xxhash();

/** XXH64 of raw bytes with a 64-bit seed (unsigned result). */
export const xxh64 = api.h64Raw;

/** XXH64 of a string's UTF-8 bytes with a 64-bit seed (unsigned result). */
export const xxh64String = api.h64;

/** XXH32 of a string's UTF-8 bytes with a 32-bit seed, as an unsigned 32-bit number. */
export function hashString32(s: string, seed: number): number {
  return api.h32(s, seed >>> 0);
}

/** The slice of the WebAssembly JS API used here (the TypeScript libs in use do not declare it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { readonly exports: object };
}

interface XxhashExports {
  readonly mem: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  /** XXH64 of mem[ptr, ptr+len) with seed; the i64 result arrives as a signed BigInt. */
  readonly xxh64: (ptr: number, len: number, seed: bigint) => bigint;
}

const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
let compiled: object | undefined;

function wasmModule(): object {
  if (compiled === undefined) {
    const entry = createRequire(import.meta.url).resolve('xxhash-wasm'); // <pkg>/cjs/xxhash-wasm.cjs
    compiled = new wasm.Module(readFileSync(join(dirname(entry), '..', 'workerd', 'xxhash.wasm')));
  }
  return compiled;
}

/**
 * V8 (Node 20) calls a WebAssembly export through a generic JS-to-wasm wrapper until that
 * export has been called about a thousand times, then compiles a signature-specific wrapper
 * synchronously inside the call that crossed the budget — per instance, so once per arena.
 * Calling it this often on an empty range at construction moves that cost (≈ 1 ms) from a
 * request to startup.
 */
const WRAPPER_WARMUP_CALLS = 1100;

/** An instance of the package's XXH64 module with at least `capacity` bytes to hash from. */
export class Xxh64Arena {
  /** The module's memory, bytes [0, capacity) belong to the caller. */
  readonly bytes: Buffer;
  readonly capacity: number;
  private readonly run: XxhashExports['xxh64'];

  constructor(capacity: number) {
    const ex = new wasm.Instance(wasmModule()).exports as XxhashExports;
    const missing = capacity - ex.mem.buffer.byteLength;
    if (missing > 0) ex.mem.grow(Math.ceil(missing / 65536));
    this.capacity = capacity;
    this.bytes = Buffer.from(ex.mem.buffer, 0, capacity);
    this.run = ex.xxh64;
    for (let i = 0; i < WRAPPER_WARMUP_CALLS; i++) this.run(0, 0, 0n);
  }

  /**
   * XXH64 of bytes [offset, offset+length) with `seed`, as the module returns it: a signed
   * 64-bit BigInt with the same bits as the unsigned hash (BigUint64Array stores wrap it).
   */
  hash(offset: number, length: number, seed: bigint): bigint {
    return this.run(offset, length, seed);
  }
}
