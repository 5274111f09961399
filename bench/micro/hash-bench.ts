/**
 * Block-hash throughput of whole 32 KB prompts: the current single-state hasher (inner loop
 * in WebAssembly, and the same loop in JavaScript) against the previous two-lane one
 * (`two-lane-hasher.ts`), side by side in one process. Repetitions
 * alternate between the hashers so machine noise hits both alike; the minimum over
 * repetitions is the least disturbed figure, the median the typical one. Three texts:
 * all ASCII (the usual prompt; latin1 text such as "é" takes the same path), ASCII with a
 * typographic apostrophe (U+2019, outside latin1) every ~1 KB, so a two-byte string with
 * mostly narrow blocks, and entirely Cyrillic text (every block UTF-16).
 */
import { BlockHasher } from '../../src/prefix-cache/block-hasher.js';
import { seededRng } from '../../src/util/rng.js';
import { words } from './chat-workload.js';
import { TwoLaneBlockHasher } from './two-lane-hasher.js';

export interface HashVariantResult {
  readonly hasher: 'single-state, wasm' | 'single-state, js' | 'two-lane (before)';
  readonly text: 'ascii' | 'quotes' | 'cyrillic';
  /** µs per prompt: least disturbed repetition and median repetition. */
  readonly microsPerPromptMin: number;
  readonly microsPerPromptMedian: number;
  readonly megaCharsPerSecond: number;
}

export interface HashBenchResult {
  readonly promptChars: number;
  readonly blockChars: number;
  readonly prompts: number;
  readonly roundsPerRepetition: number;
  readonly repetitions: number;
  readonly variants: readonly HashVariantResult[];
  /** Convenience: single-state (wasm) on ASCII text (the figure the decision bench pays). */
  readonly microsPerPrompt: number;
  readonly megaCharsPerSecond: number;
  readonly blocksPerSecond: number;
}

interface Hasher {
  hash(model: string, prefix: string): { readonly lo: Int32Array };
}

function texts(kind: HashVariantResult['text'], prompts: number, promptChars: number): string[] {
  const rng = seededRng(3);
  const out: string[] = [];
  for (let p = 0; p < prompts; p++) {
    let t = words(rng, promptChars);
    if (kind === 'quotes') {
      const parts: string[] = [];
      for (let at = 0; at < t.length; at += 1024) parts.push(t.slice(at, at + 1023), '\u2019');
      t = parts.join('').slice(0, promptChars);
    } else if (kind === 'cyrillic') {
      t = Array.from(t, (c) => String.fromCharCode(0x400 + (c.charCodeAt(0) & 0xff))).join('');
    }
    out.push(t);
  }
  // Round-trip through JSON so strings are flat, as they are when parsed from a request body.
  return JSON.parse(JSON.stringify(out)) as string[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export function runHashBench(promptChars = 32_768, blockChars = 64, prompts = 64, rounds = 10, repetitions = 6): HashBenchResult {
  const maxBlocks = Math.ceil(promptChars / blockChars);
  const hashers: Array<[HashVariantResult['hasher'], Hasher]> = [
    ['single-state, wasm', new BlockHasher({ blockChars, maxBlocks })],
    ['single-state, js', new BlockHasher({ blockChars, maxBlocks, wasm: false })],
    ['two-lane (before)', new TwoLaneBlockHasher(blockChars, maxBlocks)],
  ];
  const variants: HashVariantResult[] = [];
  let sink = 0;
  for (const kind of ['ascii', 'quotes', 'cyrillic'] as const) {
    const ts = texts(kind, prompts, promptChars);
    for (const [, h] of hashers) for (const t of ts) sink ^= h.hash('m', t).lo[0]!; // warm up the JIT
    const times = hashers.map(() => [] as number[]);
    for (let rep = 0; rep < repetitions; rep++) {
      for (let k = 0; k < hashers.length; k++) {
        const h = hashers[(k + rep) % hashers.length]![1];
        const t0 = process.hrtime.bigint();
        for (let r = 0; r < rounds; r++) for (const t of ts) sink ^= h.hash('m', t).lo[0]!;
        times[(k + rep) % hashers.length]!.push(Number(process.hrtime.bigint() - t0) / 1000 / (rounds * prompts));
      }
    }
    hashers.forEach(([name], k) => {
      const min = Math.min(...times[k]!);
      variants.push({ hasher: name, text: kind, microsPerPromptMin: min, microsPerPromptMedian: median(times[k]!), megaCharsPerSecond: promptChars / min });
    });
  }
  if (sink === 0x7fffffff) console.error(''); // keep `sink` alive
  const main = variants.find((v) => v.hasher === 'single-state, wasm' && v.text === 'ascii')!;
  return {
    promptChars,
    blockChars,
    prompts,
    roundsPerRepetition: rounds,
    repetitions,
    variants,
    microsPerPrompt: main.microsPerPromptMin,
    megaCharsPerSecond: main.megaCharsPerSecond,
    blocksPerSecond: Math.floor(promptChars / blockChars) / (main.microsPerPromptMin / 1e6),
  };
}
