/**
 * The KV-event wire format of vLLM's ZMQ publisher (0.32), decoded and encoded.
 *
 * One message = three frames: topic (UTF-8), sequence number (8 bytes, big-endian, from 0,
 * +1 per message), msgpack payload. The payload is an array `[ts, [events…], dp_rank]`
 * (msgspec "array_like"; dp_rank may be omitted). Each event is a map tagged by `type`:
 * `BlockStored` (block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
 * lora_name, extra_keys?, group_idx?, …), `BlockRemoved` (block_hashes, medium, group_idx?),
 * `AllBlocksCleared`. Block hashes are 64-bit integers by default, raw sha256 bytes when the
 * engine runs with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0; both are accepted and turned into
 * one key type (`EngineBlockKey`).
 *
 * The decoder is strict about the fields routing needs and ignores the rest, so a newer
 * engine adding fields keeps working; anything malformed is a KvWireError (the subscriber
 * counts it and resyncs the engine, it never throws into the event loop).
 */
import { decode, encode } from '@msgpack/msgpack';
import type { EngineBlockKey, KvEvent } from '../precise-index/kv-event.js';

export interface KvEventBatch {
  /** Publisher's sequence number (from the second frame). */
  readonly seq: bigint;
  readonly topic: string;
  /** Engine wall-clock seconds when the batch was made. */
  readonly ts: number;
  readonly events: readonly KvEvent[];
  readonly dpRank: number | null;
}

export class KvWireError extends Error {
  override readonly name = 'KvWireError';
}

/** Decodes one three-frame message. Throws KvWireError on anything malformed. */
export function decodeKvEventMessage(frames: readonly Uint8Array[]): KvEventBatch {
  if (frames.length !== 3) throw new KvWireError(`expected 3 frames, got ${frames.length}`);
  const [topicFrame, seqFrame, payload] = frames as [Uint8Array, Uint8Array, Uint8Array];
  if (seqFrame.byteLength !== 8) throw new KvWireError(`sequence frame must be 8 bytes, got ${seqFrame.byteLength}`);
  const seq = new DataView(seqFrame.buffer, seqFrame.byteOffset, 8).getBigInt64(0, false);
  let doc: unknown;
  try {
    doc = decode(payload, { useBigInt64: true });
  } catch (err) {
    throw new KvWireError(`payload is not msgpack: ${(err as Error).message}`);
  }
  if (!Array.isArray(doc) || doc.length < 2) throw new KvWireError('payload must be an array [ts, events, dp_rank]');
  const ts = toNumber(doc[0], 'ts');
  if (!Array.isArray(doc[1])) throw new KvWireError('payload events must be an array');
  const events = (doc[1] as unknown[]).map((e, i) => decodeEvent(e, i));
  const rank = doc[2] === undefined || doc[2] === null ? null : toNumber(doc[2], 'data_parallel_rank');
  return { seq, topic: Buffer.from(topicFrame).toString('utf8'), ts, events, dpRank: rank };
}

function decodeEvent(e: unknown, i: number): KvEvent {
  if (!isMap(e)) throw new KvWireError(`events[${i}] must be a map`);
  const type = e['type'];
  switch (type) {
    case 'BlockStored': {
      const blockHashes = keys(e['block_hashes'], `events[${i}].block_hashes`);
      const tokenIds = e['token_ids'];
      if (!Array.isArray(tokenIds)) throw new KvWireError(`events[${i}].token_ids must be an array`);
      const ids = tokenIds.map((t) => toNumber(t, `events[${i}].token_ids`));
      const blockSize = toNumber(e['block_size'], `events[${i}].block_size`);
      if (!Number.isInteger(blockSize) || blockSize < 1) throw new KvWireError(`events[${i}].block_size must be a positive integer`);
      if (ids.length !== blockSize * blockHashes.length) {
        throw new KvWireError(`events[${i}]: ${ids.length} token ids for ${blockHashes.length} blocks of ${blockSize}`);
      }
      const parent = e['parent_block_hash'];
      const extra = e['extra_keys'];
      return {
        type,
        blockHashes,
        parentBlockHash: parent === null || parent === undefined ? null : key(parent, `events[${i}].parent_block_hash`),
        tokenIds: ids,
        blockSize,
        loraName: typeof e['lora_name'] === 'string' ? e['lora_name'] : null,
        medium: typeof e['medium'] === 'string' ? e['medium'] : null,
        hasExtraKeys: Array.isArray(extra) && extra.some((x) => x !== null && !(Array.isArray(x) && x.length === 0)),
        groupIdx: optInt(e['group_idx']),
      };
    }
    case 'BlockRemoved':
      return {
        type,
        blockHashes: keys(e['block_hashes'], `events[${i}].block_hashes`),
        medium: typeof e['medium'] === 'string' ? e['medium'] : null,
        groupIdx: optInt(e['group_idx']),
      };
    case 'AllBlocksCleared':
      return { type };
    default:
      throw new KvWireError(`events[${i}]: unknown type ${typeof type === 'string' ? JSON.stringify(type.slice(0, 40)) : typeof type}`);
  }
}

/** The canonical key of one engine block hash (int → bigint, bytes → lowercase hex). */
export function engineBlockKey(v: unknown): EngineBlockKey {
  return key(v, 'block hash');
}

function key(v: unknown, where: string): EngineBlockKey {
  if (typeof v === 'bigint') return BigInt.asUintN(64, v);
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt.asUintN(64, BigInt(v));
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
  throw new KvWireError(`${where} must be an integer or bytes`);
}

function keys(v: unknown, where: string): EngineBlockKey[] {
  if (!Array.isArray(v)) throw new KvWireError(`${where} must be an array`);
  return v.map((x) => key(x, where));
}

function toNumber(v: unknown, where: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  throw new KvWireError(`${where} must be a number`);
}

function optInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) ? v : null;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

// ---- encoding (the simulator's publisher and tests) -----------------------------------

export interface BlockStoredInput {
  readonly blockHashes: readonly bigint[];
  readonly parentBlockHash: bigint | null;
  readonly tokenIds: readonly number[];
  readonly blockSize: number;
}

/** One event as the engine puts it on the wire (map with `type`). */
export type WireEvent =
  | ({ readonly type: 'BlockStored' } & BlockStoredInput)
  | { readonly type: 'BlockRemoved'; readonly blockHashes: readonly bigint[] }
  | { readonly type: 'AllBlocksCleared' };

/** Encodes one message's three frames exactly as vLLM 0.32's ZmqEventPublisher does. */
export function encodeKvEventMessage(
  topic: string,
  seq: bigint,
  ts: number,
  events: readonly WireEvent[],
  dpRank = 0,
): [Buffer, Buffer, Buffer] {
  const seqFrame = Buffer.alloc(8);
  seqFrame.writeBigInt64BE(seq);
  const wire = events.map((e) => {
    switch (e.type) {
      case 'BlockStored':
        return {
          type: 'BlockStored',
          block_hashes: e.blockHashes.map(u64),
          parent_block_hash: e.parentBlockHash === null ? null : u64(e.parentBlockHash),
          token_ids: [...e.tokenIds],
          block_size: e.blockSize,
          lora_id: null,
          medium: 'GPU',
          lora_name: null,
          group_idx: 0,
          kv_cache_spec_kind: 'full_attention',
        };
      case 'BlockRemoved':
        return { type: 'BlockRemoved', block_hashes: e.blockHashes.map(u64), medium: 'GPU', group_idx: 0 };
      default:
        return { type: 'AllBlocksCleared' };
    }
  });
  const payload = encode([ts, wire, dpRank], { useBigInt64: true });
  return [Buffer.from(topic, 'utf8'), seqFrame, Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)];
}

/** Like Python ints: values below 2^53 go out as plain msgpack ints, larger ones as uint64. */
function u64(v: bigint): number | bigint {
  const x = BigInt.asUintN(64, v);
  return x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x;
}
