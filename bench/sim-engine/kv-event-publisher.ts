/**
 * The simulator's KV-event publisher: the same ZMQ PUB wire format as vLLM 0.32 (three
 * frames: topic, 8-byte big-endian sequence from 0, msgpack `[ts, [events], dp_rank]`;
 * events are maps tagged by `type`), so the router's subscriber reads either engine.
 *
 * Like vLLM, events of one engine step go out as one message: the publisher collects what
 * the block pool reports (blocks newly cached → one `BlockStored` per run of blocks with the
 * run's parent hash and token ids; each evicted block → one `BlockRemoved`; a cache reset →
 * `AllBlocksCleared`) and flushes it on the next turn of the event loop. Block hashes are
 * the simulator's own chained hashes (53-bit), published as integers as vLLM does.
 *
 * `pause()`/`resume()` stop and restart sending while sequence numbers keep counting (what a
 * subscriber sees as lost messages), for gap tests.
 */
import { Publisher } from 'zeromq';
import { encodeKvEventMessage, type WireEvent } from '../../src/kv-events/kv-event-wire.js';
import type { BlockAllocation, KvBlockCache, KvCacheListener } from '../../src/simulate/engine/kv-block-cache.js';

export interface KvEventPublisherOptions {
  /** e.g. `tcp://127.0.0.1:5557` (bound). */
  readonly endpoint: string;
  readonly topic?: string;
  readonly blockSize: number;
  /** Wall clock in seconds for the batch timestamp (default Date.now()/1000). */
  readonly nowSeconds?: () => number;
}

export class KvEventPublisher implements KvCacheListener {
  private readonly socket = new Publisher({ sendHighWaterMark: 100_000, linger: 0 });
  private pending: WireEvent[] = [];
  private seq = 0n;
  private flushScheduled = false;
  private paused = false;
  private closed = false;
  private sending: Promise<void> = Promise.resolve();
  private readonly topic: string;
  /** Messages sent and dropped while paused. */
  sent = 0;
  dropped = 0;

  constructor(private readonly opts: KvEventPublisherOptions) {
    this.topic = opts.topic ?? 'kv-events';
  }

  /** Binds; a `:0` port picks a free one. Resolves with the bound endpoint. */
  async bind(): Promise<string> {
    await this.socket.bind(this.opts.endpoint.replace(/:0$/, ':*'));
    return this.endpoint;
  }

  /** The bound endpoint (`tcp://host:port`). */
  get endpoint(): string {
    return this.socket.lastEndpoint ?? this.opts.endpoint;
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

  async close(): Promise<void> {
    this.closed = true;
    await this.sending.catch(() => {});
    this.socket.close();
  }

  private push(e: WireEvent): void {
    if (this.closed) return;
    this.pending.push(e);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
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
    const ts = this.opts.nowSeconds?.() ?? Date.now() / 1000;
    const frames = encodeKvEventMessage(this.topic, seq, ts, events);
    // zeromq allows one send at a time per socket: chain them (order preserved).
    this.sending = this.sending
      .then(() => this.socket.send(frames))
      .then(
        () => {
          this.sent++;
        },
        () => {
          this.dropped++;
        },
      );
  }
}
