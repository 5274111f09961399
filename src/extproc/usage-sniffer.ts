/**
 * Learns the engine's own token accounting from the response body without buffering it:
 * OpenAI-compatible servers put a `usage` object (prompt_tokens, completion_tokens,
 * prompt_tokens_details.cached_tokens) at the end of a JSON response, or in the last
 * `data:` event of an SSE stream (before `data: [DONE]`; earlier events carry
 * `"usage": null`). So only the tail matters: we keep the last `maxTailBytes` bytes and
 * parse the last well-formed `"usage": {...}` object in it when the response ends. Memory
 * is bounded per stream and the body is never inspected for anything else.
 */

export interface ObservedUsage {
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  readonly cachedTokens?: number;
}

const DEFAULT_TAIL_BYTES = 16 * 1024;
/** At most this many `"usage"` occurrences are tried, newest first (bounded work). */
const MAX_ATTEMPTS = 8;
const KEY = '"usage"';

export class UsageSniffer {
  private chunks: Buffer[] = [];
  private total = 0;

  constructor(private readonly maxTailBytes: number = DEFAULT_TAIL_BYTES) {}

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length >= this.maxTailBytes) {
      // Copy: the tail must not pin a large Envoy chunk in memory.
      this.chunks = [Buffer.from(buf.subarray(buf.length - this.maxTailBytes))];
      this.total = this.maxTailBytes;
      return;
    }
    this.chunks.push(buf);
    this.total += buf.length;
    while (this.chunks.length > 1 && this.total - this.chunks[0]!.length >= this.maxTailBytes) {
      this.total -= this.chunks.shift()!.length;
    }
  }

  /** Bytes currently retained (≤ maxTailBytes + one chunk). */
  retainedBytes(): number {
    return this.total;
  }

  /** The usage found in the retained tail, if any. */
  result(): ObservedUsage | undefined {
    if (this.total === 0) return undefined;
    return findUsage(Buffer.concat(this.chunks, this.total).toString('utf8'));
  }
}

/** Finds the last parseable `"usage": {...}` object in `text`. Exported for tests. */
export function findUsage(text: string): ObservedUsage | undefined {
  let idx = text.lastIndexOf(KEY);
  for (let attempt = 0; idx >= 0 && attempt < MAX_ATTEMPTS; attempt++) {
    const parsed = objectAfterKey(text, idx + KEY.length);
    if (parsed !== undefined) {
      const usage = toUsage(parsed);
      if (usage !== undefined) return usage;
    }
    idx = idx === 0 ? -1 : text.lastIndexOf(KEY, idx - 1);
  }
  return undefined;
}

function objectAfterKey(text: string, from: number): unknown {
  let i = skipSpace(text, from);
  if (text[i] !== ':') return undefined;
  i = skipSpace(text, i + 1);
  if (text[i] !== '{') return undefined;
  const end = matchingBrace(text, i);
  if (end < 0) return undefined;
  try {
    return JSON.parse(text.slice(i, end + 1));
  } catch {
    return undefined;
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  return i;
}

/** Index of the `}` closing the `{` at `start`, honouring JSON strings; -1 if unterminated. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */) depth++;
    else if (c === 0x7d /* } */) {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.trunc(v) : undefined;
}

function toUsage(obj: unknown): ObservedUsage | undefined {
  if (typeof obj !== 'object' || obj === null) return undefined;
  const u = obj as Record<string, unknown>;
  const promptTokens = count(u['prompt_tokens']);
  const completionTokens = count(u['completion_tokens']);
  const details = u['prompt_tokens_details'];
  const cachedTokens =
    typeof details === 'object' && details !== null ? count((details as Record<string, unknown>)['cached_tokens']) : undefined;
  if (promptTokens === undefined && completionTokens === undefined && cachedTokens === undefined) return undefined;
  return {
    ...(promptTokens !== undefined ? { promptTokens } : {}),
    ...(completionTokens !== undefined ? { completionTokens } : {}),
    ...(cachedTokens !== undefined ? { cachedTokens } : {}),
  };
}
