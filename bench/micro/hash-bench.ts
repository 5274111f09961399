/**
 * Block hashing of whole 32 KB prompts, side by side in one process: the shipped
 * BlockHasher (xxhash-wasm's XXH64 module called directly, chained by seed) against the
 * same chain through xxhash-wasm's API and through the other maintained xxHash packages,
 * and optionally the home-made hasher of another build
 * (`baselineDir`, e.g. the commit before the library switch). Every candidate does the
 * product's work: write the prefix once, then one XXH64 per 64-char block seeded with the
 * previous key. Repetitions alternate between the hashers so machine noise hits all alike;
 * the minimum over repetitions is the least disturbed figure, the median the typical one.
 * Texts: all ASCII (the usual prompt), ASCII with a typographic apostrophe (U+2019) every
 * ~1 KB, and entirely Cyrillic text.
 *
 * Candidates that are not installed are reported as missing, not failed: only xxhash-wasm
 * is a dependency. `npm install --no-save @node-rs/xxhash@1.7.8 hash-wasm@4.13.0` brings the
 * others for a rerun (docs/decisions/0201-block-hash-library.md).
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BlockHasher } from '../../src/prefix-cache/block-hasher.js';
import { xxh64 } from '../../src/prefix-cache/xxhash.js';
import { seededRng } from '../../src/util/rng.js';
import { words } from './chat-workload.js';

export type HashText = 'ascii' | 'quotes' | 'cyrillic';

export interface HashVariantResult {
  readonly hasher: string;
  readonly text: HashText;
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
  readonly hashers: readonly string[];
  /** Candidates that could not be loaded, with the reason. */
  readonly missing: Readonly<Record<string, string>>;
  readonly variants: readonly HashVariantResult[];
  /** Convenience: the shipped hasher on ASCII text. */
  readonly microsPerPrompt: number;
}

interface Hasher {
  hash(model: string, prefix: string): { readonly lo: Int32Array };
}

/** One XXH64 step of the chain: key of `block` given the previous key. */
type ChainStep = (block: Uint8Array, seed: bigint) => bigint;

export const SHIPPED = 'xxhash-wasm module, direct (shipped)';

/** The shipped chain (UTF-16LE blocks, one seeded XXH64 each) on another package's XXH64. */
class ChainHasher implements Hasher {
  private readonly bytes: Buffer;
  private readonly views: Uint8Array[];
  private readonly out: Int32Array;
  private readonly split = new BigUint64Array(1);
  private readonly halves = new Int32Array(this.split.buffer);

  constructor(
    private readonly step: ChainStep,
    private readonly blockChars: number,
    maxBlocks: number,
  ) {
    const ab = new ArrayBuffer(blockChars * 2 * maxBlocks);
    this.bytes = Buffer.from(ab);
    this.views = Array.from({ length: maxBlocks }, (_, b) => new Uint8Array(ab, b * blockChars * 2, blockChars * 2));
    this.out = new Int32Array(maxBlocks * 2);
  }

  hash(model: string, prefix: string): { readonly lo: Int32Array } {
    const n = Math.min(Math.floor(prefix.length / this.blockChars), this.views.length);
    this.bytes.write(prefix, 0, n * this.blockChars * 2, 'utf16le');
    let key = this.step(Buffer.from(model, 'utf8'), 0n);
    for (let b = 0; b < n; b++) {
      key = this.step(this.views[b]!, key);
      this.split[0] = key;
      this.out[2 * b] = this.halves[0]!;
      this.out[2 * b + 1] = this.halves[1]!;
    }
    return { lo: this.out };
  }
}

async function candidates(
  blockChars: number,
  maxBlocks: number,
  baselineDir: string | undefined,
): Promise<{ hashers: Array<[string, Hasher]>; missing: Record<string, string> }> {
  const hashers: Array<[string, Hasher]> = [
    [SHIPPED, new BlockHasher({ blockChars, maxBlocks })],
    ['xxhash-wasm API (h64Raw)', new ChainHasher((b, s) => xxh64(b, s), blockChars, maxBlocks)],
  ];
  const missing: Record<string, string> = {};
  const optional = async (name: string, load: () => Promise<Hasher>): Promise<void> => {
    try {
      hashers.push([name, await load()]);
    } catch (err) {
      missing[name] = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    }
  };
  await optional('@node-rs/xxhash (napi)', async () => {
    const nrs = (await import('@node-rs/xxhash' as string)) as { xxh64(input: Uint8Array, seed: bigint): bigint };
    return new ChainHasher((b, s) => nrs.xxh64(b, s), blockChars, maxBlocks);
  });
  await optional('hash-wasm', async () => {
    // hash-wasm takes its seed only when a hasher is created (async), so the previous key is
    // hashed in front of the block instead: same chain property, one extra 8-byte update.
    const hw = (await import('hash-wasm' as string)) as {
      createXXHash64(
        lo?: number,
        hi?: number,
      ): Promise<{ init(): unknown; update(d: Uint8Array): unknown; digest(f: 'binary'): Uint8Array }>;
    };
    const h = await hw.createXXHash64(0, 0);
    const seedBytes = new DataView(new ArrayBuffer(8));
    const seedView = new Uint8Array(seedBytes.buffer);
    return new ChainHasher(
      (block, seed) => {
        seedBytes.setBigUint64(0, seed, true);
        h.init();
        h.update(seedView);
        h.update(block);
        return new DataView(h.digest('binary').buffer).getBigUint64(0, false);
      },
      blockChars,
      maxBlocks,
    );
  });
  if (baselineDir !== undefined) {
    await optional('baseline build (home-made hash + wasm kernel)', async () => {
      const url = pathToFileURL(join(baselineDir, 'dist/src/prefix-cache/block-hasher.js')).href;
      const mod = (await import(url)) as { BlockHasher: new (o: { blockChars: number; maxBlocks: number }) => Hasher };
      return new mod.BlockHasher({ blockChars, maxBlocks });
    });
  }
  return { hashers, missing };
}

function texts(kind: HashText, prompts: number, promptChars: number): string[] {
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

export interface HashBenchOptions {
  readonly promptChars?: number;
  readonly blockChars?: number;
  readonly prompts?: number;
  readonly rounds?: number;
  readonly repetitions?: number;
  /** A built checkout whose own BlockHasher joins the comparison. */
  readonly baselineDir?: string;
}

export async function runHashBench(o: HashBenchOptions = {}): Promise<HashBenchResult> {
  const promptChars = o.promptChars ?? 32_768;
  const blockChars = o.blockChars ?? 64;
  const prompts = o.prompts ?? 64;
  const rounds = o.rounds ?? 10;
  const repetitions = o.repetitions ?? 6;
  const maxBlocks = Math.ceil(promptChars / blockChars);
  const { hashers, missing } = await candidates(blockChars, maxBlocks, o.baselineDir);
  const variants: HashVariantResult[] = [];
  let sink = 0;
  for (const kind of ['ascii', 'quotes', 'cyrillic'] as const) {
    const ts = texts(kind, prompts, promptChars);
    for (const [, h] of hashers) for (const t of ts) sink ^= h.hash('m', t).lo[0]!; // warm up the JIT
    const times = hashers.map(() => [] as number[]);
    for (let rep = 0; rep < repetitions; rep++) {
      for (let k = 0; k < hashers.length; k++) {
        const i = (k + rep) % hashers.length;
        const h = hashers[i]![1];
        const t0 = process.hrtime.bigint();
        for (let r = 0; r < rounds; r++) for (const t of ts) sink ^= h.hash('m', t).lo[0]!;
        times[i]!.push(Number(process.hrtime.bigint() - t0) / 1000 / (rounds * prompts));
      }
    }
    hashers.forEach(([name], k) => {
      const min = Math.min(...times[k]!);
      variants.push({
        hasher: name,
        text: kind,
        microsPerPromptMin: min,
        microsPerPromptMedian: median(times[k]!),
        megaCharsPerSecond: promptChars / min,
      });
    });
  }
  if (sink === 0x7fffffff) console.error(''); // keep `sink` alive
  return {
    promptChars,
    blockChars,
    prompts,
    roundsPerRepetition: rounds,
    repetitions,
    hashers: hashers.map(([n]) => n),
    missing,
    variants,
    microsPerPrompt: variants.find((v) => v.hasher === SHIPPED && v.text === 'ascii')!.microsPerPromptMin,
  };
}

/** Markdown table of a hash bench result (one row per text, one column per hasher). */
export function hashBenchTable(r: HashBenchResult): string[] {
  const f1 = (v: number): string => v.toFixed(1);
  const shipped = (text: HashText): number => r.variants.find((v) => v.text === text && v.hasher === SHIPPED)!.microsPerPromptMin;
  return [
    `${r.prompts} prompts of ${r.promptChars} chars, ${r.blockChars}-char blocks (${Math.floor(r.promptChars / r.blockChars)} chained keys per prompt); ${r.repetitions} repetitions of ${r.roundsPerRepetition} rounds, alternating between the hashers. µs per prompt: least disturbed repetition / median repetition (× = min relative to the shipped hasher).`,
    '',
    `| text | ${r.hashers.join(' | ')} |`,
    `| --- | ${r.hashers.map(() => '---').join(' | ')} |`,
    ...(['ascii', 'quotes', 'cyrillic'] as const).map((text) => {
      const cells = r.hashers.map((name) => {
        const v = r.variants.find((x) => x.text === text && x.hasher === name)!;
        return `${f1(v.microsPerPromptMin)} / ${f1(v.microsPerPromptMedian)} (${(v.microsPerPromptMin / shipped(text)).toFixed(2)}×)`;
      });
      return `| ${text} | ${cells.join(' | ')} |`;
    }),
    ...(Object.keys(r.missing).length > 0
      ? [
          '',
          `Not installed here: ${Object.entries(r.missing)
            .map(([k, v]) => `${k} (${v})`)
            .join('; ')}.`,
        ]
      : []),
  ];
}
