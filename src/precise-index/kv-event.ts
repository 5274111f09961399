/**
 * An engine's KV-cache events as the event-fed index consumes them (decoded from vLLM's
 * ZMQ wire by src/kv-events/kv-event-wire.ts). The consumer owns the shape, so the index
 * knows nothing of the wire.
 */

/** An engine block hash: a 64-bit integer, or hex of the raw bytes. */
export type EngineBlockKey = bigint | string;

export interface BlockStoredEvent {
  readonly type: 'BlockStored';
  readonly blockHashes: readonly EngineBlockKey[];
  readonly parentBlockHash: EngineBlockKey | null;
  /** block_size × blockHashes.length token ids. */
  readonly tokenIds: readonly number[];
  readonly blockSize: number;
  readonly loraName: string | null;
  readonly medium: string | null;
  /** True when any block has extra keys (multimodal, cache_salt, LoRA): not reproducible from tokens. */
  readonly hasExtraKeys: boolean;
  readonly groupIdx: number | null;
}

export interface BlockRemovedEvent {
  readonly type: 'BlockRemoved';
  readonly blockHashes: readonly EngineBlockKey[];
  readonly medium: string | null;
  readonly groupIdx: number | null;
}

export interface AllBlocksClearedEvent {
  readonly type: 'AllBlocksCleared';
}

export type KvEvent = BlockStoredEvent | BlockRemovedEvent | AllBlocksClearedEvent;
