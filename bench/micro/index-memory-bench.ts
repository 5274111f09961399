/**
 * Memory per cached (endpoint, block) entry of the prefix index: fills a standalone index
 * to full capacity (16 endpoints × indexCapacityBlocks) with synthetic chained prompts, a
 * share of whose leading blocks are shared between endpoints (as hot system prompts are),
 * and reports the typed-array bytes and the process memory delta per entry and per block.
 * Run node with --expose-gc for a clean process delta.
 */
import { PrefixIndex } from '../../src/prefix-cache/prefix-index.js';
import type { BlockHashes } from '../../src/prefix-cache/block-hasher.js';
import { seededRng } from '../../src/util/rng.js';

export interface IndexMemoryOptions {
  readonly endpoints: number;
  readonly capacityBlocks: number;
  readonly blocksPerPrompt: number;
  /** Leading blocks drawn from a small shared pool (hot prefixes). */
  readonly sharedLeadingBlocks: number;
  readonly seed: number;
}

export const DEFAULT_INDEX_MEMORY: IndexMemoryOptions = {
  endpoints: 16,
  capacityBlocks: 31_250,
  blocksPerPrompt: 512,
  sharedLeadingBlocks: 64,
  seed: 7,
};

export interface IndexMemoryResult {
  readonly options: IndexMemoryOptions;
  readonly gcAvailable: boolean;
  readonly entries: number;
  readonly blocks: number;
  readonly typedArrayBytes: number;
  readonly typedArrayBytesPerEntry: number;
  readonly typedArrayBytesPerBlock: number;
  /** (heapUsed + arrayBuffers) after − before, per entry. */
  readonly processBytesPerEntry: number;
  readonly rssBytesPerEntry: number;
  readonly slots: number;
  readonly entryCapacity: number;
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g !== undefined) {
    g();
    g();
  }
}

function mem(): { heapArr: number; rss: number } {
  const m = process.memoryUsage();
  return { heapArr: m.heapUsed + m.arrayBuffers, rss: m.rss };
}

export function runIndexMemoryBench(o: IndexMemoryOptions = DEFAULT_INDEX_MEMORY): IndexMemoryResult {
  const rng = seededRng(o.seed);
  const pool = 8;
  const hot: BlockHashes[] = Array.from({ length: pool }, () => randomChain(rng, o.sharedLeadingBlocks));
  const prompt: { count: number; lo: Int32Array; hi: Int32Array } = {
    count: o.blocksPerPrompt,
    lo: new Int32Array(o.blocksPerPrompt),
    hi: new Int32Array(o.blocksPerPrompt),
  };
  gc();
  const before = mem();
  const ix = new PrefixIndex({ endpoints: o.endpoints, capacityBlocks: o.capacityBlocks });
  const target = o.endpoints * o.capacityBlocks;
  let e = 0;
  while (ix.stats().entries < target) {
    const h = hot[rng.int(pool)]!;
    prompt.lo.set(h.lo);
    prompt.hi.set(h.hi);
    for (let i = o.sharedLeadingBlocks; i < o.blocksPerPrompt; i++) {
      prompt.lo[i] = (rng.next() * 4294967296) | 0;
      prompt.hi[i] = (rng.next() * 4294967296) | 0;
    }
    ix.insert(e, prompt);
    e = (e + 1) % o.endpoints;
  }
  gc();
  const after = mem();
  const st = ix.stats();
  return {
    options: o,
    gcAvailable: (globalThis as { gc?: unknown }).gc !== undefined,
    entries: st.entries,
    blocks: st.blocks,
    typedArrayBytes: st.bytes,
    typedArrayBytesPerEntry: st.bytes / st.entries,
    typedArrayBytesPerBlock: st.bytes / st.blocks,
    processBytesPerEntry: (after.heapArr - before.heapArr) / st.entries,
    rssBytesPerEntry: (after.rss - before.rss) / st.entries,
    slots: st.slots,
    entryCapacity: st.entryCapacity,
  };
}

function randomChain(rng: ReturnType<typeof seededRng>, n: number): BlockHashes {
  const lo = new Int32Array(n);
  const hi = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    lo[i] = (rng.next() * 4294967296) | 0;
    hi[i] = (rng.next() * 4294967296) | 0;
  }
  return { count: n, lo, hi };
}
