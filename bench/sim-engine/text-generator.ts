/**
 * Dummy output: the simulator does not model language, only lengths and timing. Output
 * length is exact with ignore_eos (what benchmarks use) and otherwise drawn uniformly in
 * [1, max_tokens] from the engine's seeded Rng, imitating a model stopping early. Each
 * generated token is one word followed by a space.
 */
import type { Rng } from '../../src/util/rng.js';

const WORDS: readonly string[] = [
  'the',
  'cache',
  'router',
  'token',
  'prefix',
  'engine',
  'block',
  'batch',
  'model',
  'request',
  'queue',
  'step',
  'prefill',
  'decode',
  'latency',
  'load',
  'hit',
  'miss',
  'envoy',
  'stream',
  'simulated',
  'answer',
  'is',
  'a',
  'of',
  'and',
  'to',
  'in',
  'with',
  'for',
  'on',
  'at',
];

/** Number of tokens to generate for a request. */
export function outputLength(maxTokens: number, ignoreEos: boolean, rng: Rng): number {
  const max = Math.max(1, Math.floor(maxTokens));
  return ignoreEos ? max : 1 + rng.int(max);
}

/** Text of output token `index` of a request with the given word seed. */
export function tokenText(wordSeed: number, index: number): string {
  const w = WORDS[(Math.imul(wordSeed ^ (index * 0x9e3779b1), 0x85ebca6b) >>> 0) % WORDS.length]!;
  return w + ' ';
}
