/**
 * An engine's KV-cache changes as vLLM's publisher sends them, on any clock: the cache's
 * listener collects what the block pool reports (blocks newly cached → one `BlockStored` per
 * run of blocks with the run's parent hash and token ids; each evicted block → one
 * `BlockRemoved`; a cache reset → `AllBlocksCleared`) and, like vLLM, sends one engine step's
 * events as one message (vLLM's wire: topic, sequence from 0, msgpack payload) once the step
 * is over. Block hashes are the engine model's own chained hashes (53-bit), published as
 * integers as vLLM does.
 *
 * Shared by the HTTP simulator's ZMQ publisher (bench/sim-engine/kv-event-publisher.ts: real
 * timers) and the fleet simulator's in-process feed (src/simulate/kv-event-feed.ts: virtual
 * time), so both publish the same messages. `pause()`/`resume()` stop and restart sending
 * while sequence numbers keep counting (what a subscriber sees as lost messages).
 */
import { encodeKvEventMessage, type WireEvent } from '../../kv-events/kv-event-wire.js';
import type { BlockAllocation, KvBlockCache, KvCacheListener } from './kv-block-cache.js';

export type KvEventFrames = [Buffer, Buffer, Buffer];

export interface KvEventBatcherOptions {
  readonly blockSize: number;
  readonly topic?: string;
  /** Runs `fn` once the current engine step is over (setImmediate on real time, a zero delay on virtual time). */
  readonly defer: (fn: () => void) => void;
  /** Engine clock in seconds for the batch timestamp. */
  readonly nowSeconds: () => number;
  /** One message is ready (not called for a message dropped while paused). */
  readonly send: (frames: KvEventFrames, seq: bigint) => void;
}

export class KvEventBatcher implements KvCacheListener {
  private pending: WireEvent[] = [];
  private seq = 0n;
  private flushScheduled = false;
  private paused = false;
  private closed = false;
  private readonly topic: string;
  /** Messages not sent because the batcher was paused. */
  dropped = 0;

  constructor(private readonly opts: KvEventBatcherOptions) {
    this.topic = opts.topic ?? 'kv-events';
  }

  /** Observe `cache` from now on. */
  attach(cache: KvBlockCache): void {
    cache.listener = this;
  }

  stored(alloc: BlockAllocation, from: number, to: number): void {
    const tokens = alloc.tokens;
    if (tokens === undefined || to <= from) return;
    const bs = this.opts.blockSize;
    this.push({
      type: 'BlockStored',
      blockHashes: alloc.blocks.slice(from, to).map((b) => BigInt(b.hash)),
      parentBlockHash: from === 0 ? null : BigInt(alloc.blocks[from - 1]!.hash),
      tokenIds: tokens.slice(from * bs, to * bs),
      blockSize: bs,
    });
  }

  removed(hash: number): void {
    this.push({ type: 'BlockRemoved', blockHashes: [BigInt(hash)] });
  }

  cleared(): void {
    this.push({ type: 'AllBlocksCleared' });
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  /** Next sequence number to be used. */
  get nextSeq(): bigint {
    return this.seq;
  }

  /** Nothing is sent after this. */
  close(): void {
    this.closed = true;
    this.pending = [];
  }

  private push(e: WireEvent): void {
    if (this.closed) return;
    this.pending.push(e);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      this.opts.defer(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed || this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    const seq = this.seq;
    this.seq += 1n;
    if (this.paused) {
      this.dropped++;
      return;
    }
    this.opts.send(encodeKvEventMessage(this.topic, seq, this.opts.nowSeconds(), events), seq);
  }
}
