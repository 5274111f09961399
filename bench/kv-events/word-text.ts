/** Seeded filler prompt text for the KV-event benchmarks (whole words, so tokenizers see realistic pieces). */
import type { Rng } from '../../src/util/rng.js';

export const BENCH_WORDS =
  'the of and to in is that for it as with was on be by this are or at from which an have not but they all one can system user assistant tool call result request response model cache prefix token block engine router prompt context session question answer data value error status function argument list file path name type'.split(
    ' ',
  );

/** `chars` characters of words drawn from `words` with `rng`, space-separated. */
export function wordText(rng: Rng, chars: number, words: readonly string[] = BENCH_WORDS): string {
  let s = '';
  while (s.length < chars) s += words[Math.floor(rng.next() * words.length)]! + ' ';
  return s.slice(0, chars);
}
