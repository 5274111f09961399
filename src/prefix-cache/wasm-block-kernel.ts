/**
 * The block hasher's inner loop as a tiny WebAssembly function, assembled here from its
 * instructions (no toolchain, no dependency): same algorithm, same keys as the JavaScript
 * loop in block-hasher.ts, about twice as fast.
 *
 * Why: after halving the per-word work, hashing a 32 KB prompt was still the largest part
 * of a routing decision, and what it costs in JavaScript is mostly the bounds-checked
 * typed-array load of every word. WebAssembly loads from its linear memory without a
 * per-access check (guard pages) and keeps the stripes in registers. The hasher's buffers
 * live in the module's memory (imported, so JavaScript allocates it), hence no copy in or
 * out: the prompt is written straight into it and the keys are read from views on it.
 *
 * The function: hash_blocks(wordsAddr, blockBytes, count, lenTag, seedLo, seedHi, outLo,
 * outHi, stripeBytes) hashes `count` consecutive blocks of `blockBytes` bytes starting at
 * byte address `wordsAddr`, chaining from (seedLo, seedHi), and stores key halves as int32
 * at outLo / outHi (byte addresses, 4 bytes per block). `stripeBytes` is blockBytes rounded
 * down to a multiple of 16 (the part fed to the four stripes in turn). The JavaScript
 * reference in block-hasher.ts documents the mix; tests check both give identical keys.
 */

/** Signature of the exported function (all int32, byte addresses). */
export type HashBlocksKernel = (
  wordsAddr: number, blockBytes: number, count: number, lenTag: number,
  seedLo: number, seedHi: number, outLo: number, outHi: number, stripeBytes: number,
) => void;

/** Constants shared with the JavaScript loop; both must agree bit for bit. */
export const MIX = {
  mul: 0x9e3779b1 | 0,
  stripe2: 0x5bd1e995,
  stripe3: 0x68e31da4,
  hiMul0: 0x27d4eb2f,
  hiMul1: 0x165667b1,
} as const;

// WebAssembly opcodes used below.
const OP = {
  block: 0x02, loop: 0x03, br: 0x0c, brIf: 0x0d, end: 0x0b, call: 0x10,
  localGet: 0x20, localSet: 0x21, localTee: 0x22,
  i32Load: 0x28, i32Store: 0x36, i32Const: 0x41,
  i32GeU: 0x4f, i32Add: 0x6a, i32Mul: 0x6c, i32Xor: 0x73, i32Shl: 0x74, i32ShrU: 0x76, i32Rotl: 0x77,
} as const;
const VOID = 0x40;
const I32 = 0x7f;

function uleb(v: number): number[] {
  const out: number[] = [];
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
  return out;
}

function sleb(v: number): number[] {
  const out: number[] = [];
  v |= 0;
  for (;;) {
    const b = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (b & 0x40) === 0) || (v === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

function name(s: string): number[] {
  return [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
}

const get = (i: number): number[] => [OP.localGet, i];
const set = (i: number): number[] => [OP.localSet, i];
const tee = (i: number): number[] => [OP.localTee, i];
const c32 = (v: number): number[] => [OP.i32Const, ...sleb(v)];
const load = (offset: number): number[] => [OP.i32Load, 2, ...uleb(offset)];
const store = (): number[] => [OP.i32Store, 2, 0];
const rotl = (r: number): number[] => [...c32(r), OP.i32Rotl];

// hash_blocks parameters and locals.
const P_WORDS = 0, P_BLOCK_BYTES = 1, P_COUNT = 2, P_LEN_TAG = 3, P_SEED_LO = 4, P_SEED_HI = 5;
const P_OUT_LO = 6, P_OUT_HI = 7, P_STRIPE_BYTES = 8;
const L_A = [9, 10, 11, 12] as const;
const L_J = 13, L_STRIPE_END = 14, L_END = 15, L_K = 16, L_PL = 17, L_PH = 18, L_COUNT_BYTES = 19;
const FMIX = 1; // function index of fmix32

/** a = xorshift15((a ^ word@offset(j)) · MUL) */
function step(a: number, offset: number): number[] {
  return [...get(a), ...get(L_J), ...load(offset), OP.i32Xor, ...c32(MIX.mul), OP.i32Mul, ...tee(a), ...get(a), ...c32(15), OP.i32ShrU, OP.i32Xor, ...set(a)];
}

/** Loop `body` while local `i` < local `limit` (checked before each pass). */
function whileBelow(i: number, limit: number, body: number[]): number[] {
  return [OP.block, VOID, OP.loop, VOID, ...get(i), ...get(limit), OP.i32GeU, OP.brIf, 1, ...body, OP.br, 0, OP.end, OP.end];
}

function hashBlocksBody(): number[] {
  const [a0, a1, a2, a3] = L_A;
  const stripes = [...step(a0, 0), ...step(a1, 4), ...step(a2, 8), ...step(a3, 12), ...get(L_J), ...c32(16), OP.i32Add, ...set(L_J)];
  const tail = [...step(a0, 0), ...get(L_J), ...c32(4), OP.i32Add, ...set(L_J)];
  const perBlock = [
    ...get(L_PL), ...set(a0),
    ...get(L_PH), ...set(a1),
    ...get(L_PL), ...c32(MIX.stripe2), OP.i32Xor, ...set(a2),
    ...get(L_PH), ...c32(MIX.stripe3), OP.i32Xor, ...set(a3),
    ...get(P_WORDS), ...tee(L_J), ...get(P_STRIPE_BYTES), OP.i32Add, ...set(L_STRIPE_END),
    ...get(L_J), ...get(P_BLOCK_BYTES), OP.i32Add, ...set(L_END),
    ...whileBelow(L_J, L_STRIPE_END, stripes),
    ...whileBelow(L_J, L_END, tail),
    // pl = fmix32((rotl(a0,1) + rotl(a1,7) + rotl(a2,12) + rotl(a3,18)) ^ lenTag)
    ...get(a0), ...rotl(1), ...get(a1), ...rotl(7), OP.i32Add, ...get(a2), ...rotl(12), OP.i32Add, ...get(a3), ...rotl(18), OP.i32Add,
    ...get(P_LEN_TAG), OP.i32Xor, OP.call, FMIX, ...set(L_PL),
    // ph = fmix32(((a0 ^ rotl(a2,16))·M0 + (a1 ^ rotl(a3,16))·M1) ^ lenTag)
    ...get(a0), ...get(a2), ...rotl(16), OP.i32Xor, ...c32(MIX.hiMul0), OP.i32Mul,
    ...get(a1), ...get(a3), ...rotl(16), OP.i32Xor, ...c32(MIX.hiMul1), OP.i32Mul, OP.i32Add,
    ...get(P_LEN_TAG), OP.i32Xor, OP.call, FMIX, ...set(L_PH),
    ...get(P_OUT_LO), ...get(L_K), OP.i32Add, ...get(L_PL), ...store(),
    ...get(P_OUT_HI), ...get(L_K), OP.i32Add, ...get(L_PH), ...store(),
    ...get(L_K), ...c32(4), OP.i32Add, ...set(L_K),
    ...get(L_END), ...set(P_WORDS),
  ];
  return [
    ...get(P_SEED_LO), ...set(L_PL),
    ...get(P_SEED_HI), ...set(L_PH),
    ...get(P_COUNT), ...c32(2), OP.i32Shl, ...set(L_COUNT_BYTES),
    ...whileBelow(L_K, L_COUNT_BYTES, perBlock),
    OP.end,
  ];
}

/** murmur3 fmix32 (param 0 → result), as in mix32.ts. */
function fmixBody(): number[] {
  const shiftXor = (r: number): number[] => [...get(0), ...get(0), ...c32(r), OP.i32ShrU, OP.i32Xor, ...set(0)];
  const mul = (m: number): number[] => [...get(0), ...c32(m), OP.i32Mul, ...set(0)];
  return [...shiftXor(16), ...mul(0x85ebca6b), ...shiftXor(13), ...mul(0xc2b2ae35), ...shiftXor(16), ...get(0), OP.end];
}

function moduleBytes(): Uint8Array {
  const hashType = [0x60, ...vec(Array.from({ length: 9 }, () => [I32])), 0];
  const fmixType = [0x60, 1, I32, 1, I32];
  const memoryImport = [...name('env'), ...name('memory'), 0x02, 0x00, 1];
  const hashCode = [...vec([[...uleb(11), I32]]), ...hashBlocksBody()];
  const fmixCode = [0, ...fmixBody()];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([hashType, fmixType])),
    ...section(2, vec([memoryImport])),
    ...section(3, vec([[0], [1]])),
    ...section(7, vec([[...name('hash_blocks'), 0x00, 0]])),
    ...section(10, vec([[...uleb(hashCode.length), ...hashCode], [...uleb(fmixCode.length), ...fmixCode]])),
  ]);
}

/** The slice of the WebAssembly JS API used here (the TypeScript libs in use do not declare it). */
interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
}

let compiled: object | null | undefined;

/**
 * V8 (Node 20) calls a WebAssembly export through a generic JS-to-wasm wrapper until that
 * export has been called about a thousand times, and then compiles a signature-specific
 * wrapper synchronously, inside the call that crossed the budget — per instance, so once
 * per hasher. Measured: the ~1000th hash of every new hasher took 0.6–0.9 ms instead of
 * ~20 µs (one decision in every benchmark repetition, and one request of a fresh router).
 * Calling the kernel this many times with no blocks at construction (≈ 0.1 ms of calls,
 * then the wrapper compile) moves that cost to startup.
 */
const WRAPPER_WARMUP_CALLS = 1100;

/**
 * A fixed-size WebAssembly memory of at least `bytes` bytes with the kernel bound to it, or
 * undefined where WebAssembly is unavailable (e.g. node --jitless): the hasher then runs
 * its JavaScript loop over a plain ArrayBuffer.
 */
export function wasmBlockKernel(bytes: number): { readonly buffer: ArrayBuffer; readonly kernel: HashBlocksKernel } | undefined {
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (api === undefined || compiled === null) return undefined;
  if (compiled === undefined) {
    try {
      compiled = new api.Module(moduleBytes());
    } catch {
      compiled = null; // the engine refuses the module: never retry
      return undefined;
    }
  }
  try {
    const pages = Math.max(1, Math.ceil(bytes / 65536));
    const memory = new api.Memory({ initial: pages, maximum: pages });
    const instance = new api.Instance(compiled, { env: { memory } });
    const kernel = instance.exports['hash_blocks'] as HashBlocksKernel;
    // Pay the JS-to-WebAssembly wrapper compilation now rather than on a request (see WRAPPER_WARMUP_CALLS).
    for (let i = 0; i < WRAPPER_WARMUP_CALLS; i++) kernel(0, 0, 0, 0, 0, 0, 0, 0, 0);
    return { buffer: memory.buffer, kernel };
  } catch {
    return undefined; // e.g. no address space for another memory: this hasher runs JavaScript
  }
}
