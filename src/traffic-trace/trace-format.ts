/**
 * The traffic trace's file format: JSONL, one request per line, in the layout of the public
 * Mooncake traces (FAST'25) so tools that replay those replay ours too:
 *
 *   {"timestamp":1234,"input_length":2048,"output_length":180,"hash_ids":[0,1,2,7],
 *    "model":"m","block_tokens":64}
 *
 * - `timestamp`: arrival in ms from the trace's first request;
 * - `input_length`, `output_length`: prompt and output tokens;
 * - `hash_ids`: one id per full block of `block_tokens` tokens of the prompt's start, as a
 *   prefix chain: equal id at position i means an equal prompt up to the end of block i.
 *   Ids are small integers numbered per trace in order of first appearance, so a file says
 *   which requests share which prefix and nothing about the text;
 * - optional `model`, `block_tokens` (default 512, the Mooncake traces' block) and
 *   `output_estimated` (true when the output length was estimated from the response's size
 *   instead of read from the engine's `usage`).
 *
 * A prompt may be longer than its `hash_ids` cover (the router hashes a bounded prefix);
 * replaying treats the rest as unique to the request. Lines may be in any order (the
 * recorder writes them as requests finish); the reader sorts them by arrival.
 */
import { RouterError } from '../core/errors.js';

/** The block size of the public Mooncake traces, for lines that do not name one. */
export const MOONCAKE_BLOCK_TOKENS = 512;

/** One request of a trace. */
export interface TraceEntry {
  /** Arrival, ms from the trace's start. */
  readonly atMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Per-trace prefix-chain ids, one per full block of `blockTokens` tokens. */
  readonly blockIds: readonly number[];
  readonly blockTokens: number;
  /** '' when unknown (public traces carry no model). */
  readonly model: string;
  /** True when outputTokens was estimated from the response size. */
  readonly outputEstimated?: boolean;
}

/** One JSONL line (with its newline) for `e`. */
export function formatTraceLine(e: TraceEntry): string {
  const line: Record<string, unknown> = {
    timestamp: Math.round(e.atMs),
    input_length: e.inputTokens,
    output_length: e.outputTokens,
    hash_ids: e.blockIds,
  };
  if (e.model !== '') line['model'] = e.model;
  line['block_tokens'] = e.blockTokens;
  if (e.outputEstimated === true) line['output_estimated'] = true;
  return `${JSON.stringify(line)}\n`;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/**
 * Parses a trace (ours or a public Mooncake one): blank lines are skipped, extra keys are
 * ignored, a malformed line throws BAD_CONFIG naming its line. Entries come back sorted by
 * arrival (stable), with timestamps moved so the first request arrives at 0.
 */
export function parseTrace(text: string, source = 'trace'): TraceEntry[] {
  const out: TraceEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    const bad = (why: string): RouterError => new RouterError('BAD_CONFIG', `${source} line ${i + 1}: ${why}`);
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch (err) {
      throw bad(`not JSON (${(err as Error).message})`);
    }
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw bad('expected a JSON object');
    const r = o as Record<string, unknown>;
    const ts = r['timestamp'];
    const ids = r['hash_ids'];
    if (typeof ts !== 'number' || !Number.isFinite(ts) || ts < 0) throw bad('timestamp must be a non-negative number (ms)');
    if (!isCount(r['input_length']) || r['input_length'] < 1) throw bad('input_length must be a positive integer');
    if (!isCount(r['output_length'])) throw bad('output_length must be a non-negative integer');
    if (!Array.isArray(ids) || !ids.every(isCount)) throw bad('hash_ids must be an array of non-negative integers');
    const block = r['block_tokens'] ?? MOONCAKE_BLOCK_TOKENS;
    if (!isCount(block) || block < 1) throw bad('block_tokens must be a positive integer');
    const model = r['model'] ?? '';
    if (typeof model !== 'string') throw bad('model must be a string');
    out.push({
      atMs: ts,
      inputTokens: r['input_length'],
      outputTokens: r['output_length'],
      blockIds: ids as number[],
      blockTokens: block,
      model,
      ...(r['output_estimated'] === true ? { outputEstimated: true } : {}),
    });
  }
  out.sort((a, b) => a.atMs - b.atMs);
  const t0 = out.length > 0 ? out[0]!.atMs : 0;
  return t0 === 0 ? out : out.map((e) => ({ ...e, atMs: e.atMs - t0 }));
}
