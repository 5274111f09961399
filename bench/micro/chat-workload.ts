/**
 * Deterministic chat-like prompts for the micro benchmarks: a pool of system prompts and
 * conversations whose histories are shared across requests, each request ending in a fresh
 * user message, plus a share of entirely cold prompts. Everything derives from a seed.
 */
import { seededRng, type Rng } from '../../src/util/rng.js';

const WORDS = [
  'the',
  'model',
  'router',
  'cache',
  'prefix',
  'engine',
  'token',
  'request',
  'latency',
  'queue',
  'system',
  'assistant',
  'user',
  'tool',
  'call',
  'json',
  'answer',
  'question',
  'please',
  'explain',
  'why',
  'how',
  'what',
  'function',
  'returns',
  'value',
  'error',
  'code',
  'data',
  'batch',
];

/**
 * `chars` characters of word salad. Built with Array.join, so the result is a flat string like
 * the extractor's prefix (a rope from `+=` would make the benchmark pay for flattening).
 */
export function words(rng: Rng, chars: number): string {
  const parts: string[] = [];
  let n = 0;
  while (n < chars) {
    const w = WORDS[rng.int(WORDS.length)]! + (rng.int(12) === 0 ? '.\n' : ' ');
    parts.push(w);
    n += w.length;
  }
  return parts.join('').slice(0, chars);
}

export interface ChatWorkloadOptions {
  readonly seed: number;
  readonly promptChars: number;
  readonly systemPrompts: number;
  readonly systemChars: number;
  readonly conversations: number;
  /** Length of the fresh user message at the end of each request. */
  readonly userChars: number;
  /** Share of requests that are entirely new text. */
  readonly coldShare: number;
}

export class ChatWorkload {
  private readonly rng: Rng;
  private readonly systems: string[];
  private readonly histories: string[];

  constructor(readonly opts: ChatWorkloadOptions) {
    this.rng = seededRng(opts.seed);
    this.systems = Array.from({ length: opts.systemPrompts }, () => words(this.rng, opts.systemChars));
    const historyChars = opts.promptChars - opts.systemChars - opts.userChars;
    this.histories = Array.from({ length: opts.conversations }, () => words(this.rng, historyChars));
  }

  /** The prompt of conversation `c` with a fresh user message. */
  conversation(c: number): string {
    const o = this.opts;
    return [this.systems[c % o.systemPrompts]!, this.histories[c]!, words(this.rng, o.userChars)].join('');
  }

  /** A random request: cold with probability coldShare, otherwise a random conversation. */
  next(): { prompt: string; cold: boolean } {
    if (this.rng.next() < this.opts.coldShare) return { prompt: words(this.rng, this.opts.promptChars), cold: true };
    return { prompt: this.conversation(this.rng.int(this.opts.conversations)), cold: false };
  }
}
