/** Block-hash throughput: chained two-lane hashing of whole 32 KB prompts. */
import { BlockHasher } from '../../src/prefix-cache/block-hasher.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng } from '../../src/util/rng.js';
import { words } from './chat-workload.js';

export interface HashBenchResult {
  readonly promptChars: number;
  readonly blockChars: number;
  readonly prompts: number;
  readonly rounds: number;
  readonly microsPerPrompt: number;
  readonly megaCharsPerSecond: number;
  readonly blocksPerSecond: number;
}

export function runHashBench(promptChars = 32_768, blockChars = 64, prompts = 64, rounds = 40): HashBenchResult {
  const rng = seededRng(3);
  // Round-trip through JSON so strings are flat, as they are when parsed from a request body.
  const texts = JSON.parse(JSON.stringify(Array.from({ length: prompts }, () => words(rng, promptChars)))) as string[];
  const h = new BlockHasher({ blockChars, maxBlocks: Math.ceil(promptChars / blockChars) });
  let sink = 0;
  for (const t of texts) sink ^= h.hash('m', t).lo[0]!; // warm up the JIT
  const t0 = systemClock.nowMicros();
  for (let r = 0; r < rounds; r++) for (const t of texts) sink ^= h.hash('m', t).lo[0]!;
  const us = systemClock.nowMicros() - t0;
  const n = rounds * prompts;
  if (sink === 0x7fffffff) console.error(''); // keep `sink` alive
  return {
    promptChars,
    blockChars,
    prompts,
    rounds,
    microsPerPrompt: us / n,
    megaCharsPerSecond: (n * promptChars) / us,
    blocksPerSecond: (n * Math.floor(promptChars / blockChars)) / (us / 1e6),
  };
}
