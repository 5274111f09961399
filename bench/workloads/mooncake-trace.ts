/**
 * Replay of Mooncake (FAST'25) traces: JSONL, one request per line with `timestamp` (ms
 * from trace start), `input_length`, `output_length` and `hash_ids` (one id per 512-token
 * block, prefix-chain ids: equal id at position i means an equal prefix up to that block).
 *
 * No text is released with the traces, so each hash id becomes deterministic synthetic
 * text seeded by the id: equal ids give identical text, so engine-side block hashing
 * (16/32/64 tokens, all divisors of 512) sees shared prefixes exactly where the trace
 * says. The final partial block is the first tokens of its id's block text. Token and
 * time scales shrink real traces to what this machine can serve; both are explicit.
 */
import { seededRng } from '../../src/util/rng.js';
import { PrefixChainTracker, shapePrompt, type Segment } from './prompt-shape.js';
import { firstTokens, syntheticTokens } from '../../test/kit/synthetic-text.js';
import type { ApiKind, BenchRequest, Workload } from './types.js';

export interface MooncakeEntry {
  readonly timestamp: number;
  readonly input_length: number;
  readonly output_length: number;
  readonly hash_ids: readonly number[];
}

export const MOONCAKE_BLOCK_TOKENS = 512;

/**
 * Parses a Mooncake JSONL file. Extra keys (some replayers add session ids) are ignored;
 * blank lines are skipped; a malformed line throws with its line number.
 */
export function parseMooncakeTrace(text: string): MooncakeEntry[] {
  const out: MooncakeEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (err) {
      throw new Error(`mooncake trace line ${i + 1}: not JSON (${(err as Error).message})`);
    }
    const o = obj as Record<string, unknown>;
    const ts = o['timestamp'];
    const inLen = o['input_length'];
    const outLen = o['output_length'];
    const ids = o['hash_ids'];
    if (
      typeof ts !== 'number' ||
      typeof inLen !== 'number' ||
      typeof outLen !== 'number' ||
      !Array.isArray(ids) ||
      !ids.every((x) => Number.isInteger(x))
    ) {
      throw new Error(`mooncake trace line ${i + 1}: expected {timestamp, input_length, output_length, hash_ids[]}`);
    }
    if (inLen < 1 || outLen < 0 || ts < 0) throw new Error(`mooncake trace line ${i + 1}: negative or empty lengths`);
    out.push({ timestamp: ts, input_length: inLen, output_length: outLen, hash_ids: ids as number[] });
  }
  return out;
}

export interface MooncakeReplayParams {
  readonly entries: readonly MooncakeEntry[];
  /** Multiplies all token lengths (block size included); e.g. 0.125 turns 512-token blocks into 64. */
  readonly tokenScale: number;
  /** Multiplies timestamps; e.g. 0.1 replays ten times faster. */
  readonly timeScale: number;
  /** Replay only the first N entries (after `skip`). */
  readonly maxRequests?: number;
  readonly skip?: number;
  /** Cap on output tokens per request after scaling (keeps decode time bounded). */
  readonly maxOutputTokens?: number;
  readonly api: ApiKind;
  /** Salts the per-id text, so different seeds give unrelated text with the same sharing. */
  readonly seed: number;
  /** Name for results (default `mooncake`). */
  readonly name?: string;
}

export function mooncakeWorkload(p: MooncakeReplayParams): Workload {
  if (!(p.tokenScale > 0) || !(p.timeScale >= 0)) throw new RangeError('tokenScale must be > 0 and timeScale >= 0');
  const name = p.name ?? 'mooncake';
  const block = Math.max(1, Math.round(MOONCAKE_BLOCK_TOKENS * p.tokenScale));
  const skip = p.skip ?? 0;
  const slice = p.entries.slice(skip, p.maxRequests === undefined ? undefined : skip + p.maxRequests);
  const t0 = slice.length > 0 ? (slice[0] as MooncakeEntry).timestamp : 0;
  const blockText = new Map<number, string>();
  const textOf = (id: number): string => {
    let t = blockText.get(id);
    if (t === undefined) {
      t = syntheticTokens(`mooncake/${p.seed}/${id}`, block);
      blockText.set(id, t);
    }
    return t;
  };
  const tracker = new PrefixChainTracker();
  const requests: BenchRequest[] = [];
  slice.forEach((e, i) => {
    const wantTokens = Math.max(1, Math.round(e.input_length * p.tokenScale));
    const parts: string[] = [];
    const segments: Segment[] = [];
    let remaining = wantTokens;
    for (const id of e.hash_ids) {
      if (remaining <= 0) break;
      const take = Math.min(block, remaining);
      parts.push(take === block ? textOf(id) : firstTokens(textOf(id), take));
      segments.push({ key: take === block ? `${id}` : `${id}#${take}`, tokens: take });
      remaining -= take;
    }
    if (remaining > 0) {
      // The line has fewer ids than its length needs: pad with text unique to this request.
      parts.push(syntheticTokens(`mooncake/${p.seed}/pad/${skip + i}`, remaining));
      segments.push({ key: `pad/${skip + i}`, tokens: remaining });
    }
    let out = Math.max(1, Math.round(e.output_length * p.tokenScale));
    if (p.maxOutputTokens !== undefined) out = Math.min(out, p.maxOutputTokens);
    const shaped = shapePrompt(p.api, [{ role: 'user', content: parts.join('') }]);
    requests.push({
      id: `${name}-${skip + i}`,
      atMs: (e.timestamp - t0) * p.timeScale,
      api: p.api,
      ...shaped,
      maxTokens: out,
      group: e.hash_ids.length > 0 ? `h${e.hash_ids[0]}` : '',
      reusableTokens: tracker.observe(segments),
    });
  });
  const { entries, ...rest } = p;
  return { name, requests, params: { ...rest, entriesInFile: entries.length, requests: requests.length, blockTokens: block } };
}

export interface SyntheticTraceParams {
  readonly seed: number;
  readonly sessions: number;
  /** Trace length in ms over which sessions start (Poisson-like). */
  readonly durationMs: number;
  readonly maxTurns: number;
  /** Pool of shared documents (several blocks each) that sessions may quote after the common first block. */
  readonly sharedDocs: number;
  readonly meanThinkMs: number;
}

/**
 * Generates a small conversation-like trace in Mooncake format: every request starts
 * with one common block (id 0, as in the real conversation trace), some sessions quote
 * one of a few shared documents, and each turn appends the previous reply and a new user
 * message, so later turns reuse their session's earlier blocks. Ids are assigned as the
 * real traces do: prefix-chain ids, fresh ids are the next unused integer.
 */
export function generateSyntheticMooncakeTrace(p: SyntheticTraceParams): MooncakeEntry[] {
  const rng = seededRng(p.seed);
  const B = MOONCAKE_BLOCK_TOKENS;
  const between = (lo: number, hi: number): number => lo + rng.int(hi - lo + 1);
  const docs: number[] = [];
  for (let d = 0; d < p.sharedDocs; d++) docs.push(between(2, 6) * B);
  interface Pending {
    ts: number;
    session: number;
    lengthTokens: number;
    shared: number;
    doc: number;
    out: number;
  }
  const pending: Pending[] = [];
  for (let s = 0; s < p.sessions; s++) {
    let ts = Math.floor(rng.next() * p.durationMs);
    const doc = p.sharedDocs > 0 && rng.next() < 0.5 ? rng.int(p.sharedDocs) : -1;
    // Shared part: common first block, then the document (if any), block aligned.
    const shared = B + (doc >= 0 ? (docs[doc] as number) : 0);
    let length = shared + between(B / 4, 3 * B); // session's own context
    const turns = between(1, p.maxTurns);
    for (let t = 0; t < turns; t++) {
      length += between(32, 600); // new user message
      const out = between(40, 400);
      pending.push({ ts, session: s, lengthTokens: length, shared, doc, out });
      length += out; // the reply becomes part of the next turn's prompt
      ts += Math.max(1000, Math.round(-Math.log(1 - rng.next()) * p.meanThinkMs));
    }
  }
  pending.sort((a, b) => a.ts - b.ts || a.session - b.session);
  const chainIds = new Map<string, number>();
  let nextId = 0;
  return pending.map((r) => {
    const blocks = Math.ceil(r.lengthTokens / B);
    const ids: number[] = [];
    let chain = '';
    for (let k = 0; k < blocks; k++) {
      const end = Math.min((k + 1) * B, r.lengthTokens);
      let key: string;
      if (k === 0) key = 'common';
      else if (end <= r.shared) key = `doc${r.doc}/${k}`;
      else key = end - k * B === B ? `s${r.session}/${k}` : `s${r.session}/${k}#${end - k * B}`;
      chain += `|${key}`;
      let id = chainIds.get(chain);
      if (id === undefined) {
        id = nextId++;
        chainIds.set(chain, id);
      }
      ids.push(id);
    }
    return { timestamp: r.ts, input_length: r.lengthTokens, output_length: r.out, hash_ids: ids };
  });
}

export function formatMooncakeTrace(entries: readonly MooncakeEntry[]): string {
  return (
    entries
      .map((e) =>
        JSON.stringify({ timestamp: e.timestamp, input_length: e.input_length, output_length: e.output_length, hash_ids: e.hash_ids }),
      )
      .join('\n') + '\n'
  );
}
