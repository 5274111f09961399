/**
 * The two messages replicas exchange, as msgpack:
 *
 *   load report (core NATS, `<prefix>.load`, every load interval):
 *     { v: 1, r: replicaId, e: [[endpointId, inflight, prefilling, promptTokens, pendingTokens], …] }
 *   index batch (JetStream, `<prefix>.index`, every flush interval with changes):
 *     { v: 1, r: publisher, b: blockChars, c: [[kind, endpointId, keys], …] }
 *     publisher = `<replicaId>/<incarnation>` (one per router process)
 *     kind 0 = insert, 1 = remove, 2 = clear; keys = 8 bytes per block (lo, hi int32 LE).
 *   forwarded completions (core NATS, `<prefix>.completions.<owner>`, one per access-log batch):
 *     { v: 1, r: sender, c: [[ticketKey, aborted 0|1, status|nil, servedBy|nil, prompt|nil, cached|nil, completion|nil], …],
 *       t?: [firstBodyMs|nil, …] }   (one per row of c; absent when no row has one)
 *
 * Why this shape: a block key is a 64-bit hash of the prompt text, so no prompt text is
 * ever on the wire; the keys travel as one binary blob per change (8 bytes a block, no
 * per-key framing), and the only strings are replica and endpoint ids. Decoding validates
 * everything and returns undefined for anything malformed or oversized: a bad message is
 * dropped and counted, never applied halfway. The first-body times (what the TTFT model
 * learns from) ride in their own optional field rather than an eighth row column, so the
 * versions interoperate during a rolling upgrade: an older replica reads the rows and ignores
 * `t`, a newer one reads an older message as having no first-body times.
 */
import { decode, encode } from '@msgpack/msgpack';
import type { BlockHashes } from '../prefix-cache/block-hasher.js';
import type { IndexDelta } from '../plugins/multi/prefix-index-replica.js';
import type { RequestOutcome } from '../core/types.js';

export const WIRE_VERSION = 1;

/** One engine's load as one replica contributes it. */
export interface EndpointLoadShare {
  readonly endpointId: string;
  readonly inflightRequests: number;
  readonly prefillingRequests: number;
  readonly inflightPromptTokens: number;
  readonly pendingTokens: number;
}

export interface LoadReport {
  readonly replicaId: string;
  readonly endpoints: readonly EndpointLoadShare[];
}

export interface IndexBatch {
  readonly replicaId: string;
  readonly blockChars: number;
  readonly changes: readonly IndexDelta[];
}

/** Bounds a decoder enforces (a message beyond them is rejected whole). */
export const WIRE_LIMITS = {
  /** NATS's default max_payload (1 MiB): a bigger message would be refused by the server anyway. */
  maxMessageBytes: 1024 * 1024,
  /** Batches are sealed at this size, well under maxMessageBytes. */
  batchBytes: 256 * 1024,
  maxEndpoints: 4096,
  maxChanges: 10_000,
  maxKeysPerChange: 65_536,
  maxIdChars: 256,
  /** A first-body time beyond an hour is no measurement (the access-log receiver's own bound). */
  maxFirstBodyMs: 3_600_000,
} as const;

const KINDS = ['insert', 'remove', 'clear'] as const;

export function encodeLoadReport(r: LoadReport): Uint8Array {
  return encode({
    v: WIRE_VERSION,
    r: r.replicaId,
    e: r.endpoints.map((s) => [s.endpointId, s.inflightRequests, s.prefillingRequests, s.inflightPromptTokens, s.pendingTokens]),
  });
}

export function decodeLoadReport(bytes: Uint8Array): LoadReport | undefined {
  const env = decodeEnvelope(bytes, 'e', WIRE_LIMITS.maxEndpoints);
  if (env === undefined) return undefined;
  const endpoints: EndpointLoadShare[] = [];
  for (const row of env.rows) {
    if (!Array.isArray(row) || row.length !== 5 || !isId(row[0])) return undefined;
    const [id, inflight, prefilling, prompt, pending] = row as [string, unknown, unknown, unknown, unknown];
    if (!isCount(inflight) || !isCount(prefilling) || !isAmount(prompt) || !isAmount(pending)) return undefined;
    endpoints.push({
      endpointId: id,
      inflightRequests: inflight,
      prefillingRequests: prefilling,
      inflightPromptTokens: prompt,
      pendingTokens: pending,
    });
  }
  return { replicaId: env.replicaId, endpoints };
}

/** The keys of a change as 8 bytes per block. */
export function packKeys(keys: BlockHashes): Uint8Array {
  const out = new Uint8Array(keys.count * 8);
  const view = new DataView(out.buffer);
  for (let i = 0; i < keys.count; i++) {
    view.setInt32(i * 8, keys.lo[i]!, true);
    view.setInt32(i * 8 + 4, keys.hi[i]!, true);
  }
  return out;
}

export function unpackKeys(bytes: Uint8Array): BlockHashes | undefined {
  if (bytes.length % 8 !== 0 || bytes.length / 8 > WIRE_LIMITS.maxKeysPerChange) return undefined;
  const count = bytes.length / 8;
  const lo = new Int32Array(count);
  const hi = new Int32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    lo[i] = view.getInt32(i * 8, true);
    hi[i] = view.getInt32(i * 8 + 4, true);
  }
  return { count, lo, hi };
}

/** A change ready for a batch (keys already packed, so the batch owns them). */
export interface PackedChange {
  readonly kind: IndexDelta['kind'];
  readonly endpointId: string;
  readonly keys: Uint8Array;
}

export function packChange(d: IndexDelta): PackedChange {
  return { kind: d.kind, endpointId: d.endpointId, keys: packKeys(d.keys) };
}

export function encodeIndexBatch(replicaId: string, blockChars: number, changes: readonly PackedChange[]): Uint8Array {
  return encode({ v: WIRE_VERSION, r: replicaId, b: blockChars, c: changes.map((c) => [KINDS.indexOf(c.kind), c.endpointId, c.keys]) });
}

export function decodeIndexBatch(bytes: Uint8Array): IndexBatch | undefined {
  const env = decodeEnvelope(bytes, 'c', WIRE_LIMITS.maxChanges);
  if (env === undefined) return undefined;
  const b = env.fields['b'];
  if (typeof b !== 'number' || !Number.isInteger(b) || b < 1) return undefined;
  const changes: IndexDelta[] = [];
  for (const row of env.rows) {
    if (!Array.isArray(row) || row.length !== 3) return undefined;
    const [k, id, raw] = row as [unknown, unknown, unknown];
    const kind = typeof k === 'number' ? KINDS[k] : undefined;
    if (kind === undefined || !isId(id) || !(raw instanceof Uint8Array)) return undefined;
    const keys = unpackKeys(raw);
    if (keys === undefined) return undefined;
    changes.push({ kind, endpointId: id, keys });
  }
  return { replicaId: env.replicaId, blockChars: b, changes };
}

/** One request's end, reported to the replica holding its ticket. */
export interface ForwardedCompletion {
  readonly key: string;
  readonly outcome: RequestOutcome;
}

export interface CompletionBatch {
  readonly replicaId: string;
  readonly completions: readonly ForwardedCompletion[];
}

export function encodeCompletions(replicaId: string, completions: readonly ForwardedCompletion[]): Uint8Array {
  const timed = completions.some((c) => c.outcome.firstBodyMs !== undefined);
  return encode({
    v: WIRE_VERSION,
    r: replicaId,
    ...(timed ? { t: completions.map((c) => c.outcome.firstBodyMs ?? null) } : {}),
    c: completions.map(({ key, outcome: o }) => [
      key,
      o.aborted ? 1 : 0,
      o.status ?? null,
      o.servedBy ?? null,
      o.promptTokens ?? null,
      o.cachedTokens ?? null,
      o.completionTokens ?? null,
    ]),
  });
}

export function decodeCompletions(bytes: Uint8Array): CompletionBatch | undefined {
  const env = decodeEnvelope(bytes, 'c', WIRE_LIMITS.maxChanges);
  if (env === undefined) return undefined;
  const times = env.fields['t'];
  if (times !== undefined && (!Array.isArray(times) || times.length !== env.rows.length)) return undefined;
  const completions: ForwardedCompletion[] = [];
  for (const [i, row] of env.rows.entries()) {
    if (!Array.isArray(row) || row.length !== 7) return undefined;
    const firstBody: unknown = times?.[i] ?? null;
    if (!(firstBody === null || (isAmount(firstBody) && firstBody < WIRE_LIMITS.maxFirstBodyMs))) return undefined;
    const [key, aborted, status, servedBy, prompt, cached, completion] = row as unknown[];
    if (!isId(key) || (aborted !== 0 && aborted !== 1)) return undefined;
    if (!(status === null || (isCount(status) && status >= 100 && status <= 999))) return undefined;
    if (!(servedBy === null || isId(servedBy))) return undefined;
    if (![prompt, cached, completion].every((t) => t === null || isCount(t))) return undefined;
    const outcome: RequestOutcome = {
      aborted: aborted === 1,
      ...(status !== null ? { status: status as number } : {}),
      ...(servedBy !== null ? { servedBy: servedBy as string } : {}),
      ...(prompt !== null ? { promptTokens: prompt as number } : {}),
      ...(cached !== null ? { cachedTokens: cached as number } : {}),
      ...(completion !== null ? { completionTokens: completion as number } : {}),
      ...(firstBody !== null ? { firstBodyMs: firstBody } : {}),
    };
    completions.push({ key, outcome });
  }
  return { replicaId: env.replicaId, completions };
}

/** Every message: this wire version, the sender's replica id and one list of rows (at most `maxRows`). */
function decodeEnvelope(
  bytes: Uint8Array,
  rowsField: string,
  maxRows: number,
): { fields: Record<string, unknown>; replicaId: string; rows: unknown[] } | undefined {
  const m = decodeMap(bytes);
  if (m === undefined || m['v'] !== WIRE_VERSION || !isId(m['r'])) return undefined;
  const rows = m[rowsField];
  if (!Array.isArray(rows) || rows.length > maxRows) return undefined;
  return { fields: m, replicaId: m['r'], rows };
}

function decodeMap(bytes: Uint8Array): Record<string, unknown> | undefined {
  if (bytes.length === 0 || bytes.length > WIRE_LIMITS.maxMessageBytes) return undefined;
  let v: unknown;
  try {
    v = decode(bytes, {
      maxStrLength: 4096,
      maxArrayLength: WIRE_LIMITS.maxChanges,
      maxMapLength: 16,
      maxBinLength: WIRE_LIMITS.maxKeysPerChange * 8,
    });
  } catch {
    return undefined;
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)
    ? (v as Record<string, unknown>)
    : undefined;
}

function isId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= WIRE_LIMITS.maxIdChars;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 1e9;
}

function isAmount(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 1e15;
}
