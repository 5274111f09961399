/**
 * The simulator's KV-event publisher: the engine model's KV-event batcher
 * (src/simulate/engine/kv-event-batcher.ts: vLLM 0.32's messages, one per engine step) sent
 * on a ZMQ PUB socket, so the router's subscriber reads either engine.
 *
 * `pause()`/`resume()` stop and restart sending while sequence numbers keep counting (what a
 * subscriber sees as lost messages), for gap tests.
 */
import { Publisher } from 'zeromq';
import { KvEventBatcher } from '../../src/simulate/engine/kv-event-batcher.js';
import type { KvBlockCache } from '../../src/simulate/engine/kv-block-cache.js';

export interface KvEventPublisherOptions {
  /** e.g. `tcp://127.0.0.1:5557` (bound). */
  readonly endpoint: string;
  readonly topic?: string;
  readonly blockSize: number;
  /** Wall clock in seconds for the batch timestamp (default Date.now()/1000). */
  readonly nowSeconds?: () => number;
}

export class KvEventPublisher {
  private readonly socket = new Publisher({ sendHighWaterMark: 100_000, linger: 0 });
  private readonly batcher: KvEventBatcher;
  private closed = false;
  private sending: Promise<void> = Promise.resolve();
  /** Messages sent, and dropped (while paused, or refused by the socket). */
  sent = 0;
  private sendFailures = 0;

  constructor(private readonly opts: KvEventPublisherOptions) {
    this.batcher = new KvEventBatcher({
      blockSize: opts.blockSize,
      ...(opts.topic !== undefined ? { topic: opts.topic } : {}),
      defer: (fn) => setImmediate(fn),
      nowSeconds: opts.nowSeconds ?? (() => Date.now() / 1000),
      send: (frames) => {
        // zeromq allows one send at a time per socket: chain them (order preserved).
        this.sending = this.sending
          .then(() => this.socket.send(frames))
          .then(
            () => {
              this.sent++;
            },
            () => {
              this.sendFailures++;
            },
          );
      },
    });
  }

  get dropped(): number {
    return this.batcher.dropped + this.sendFailures;
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
    this.batcher.attach(cache);
  }

  pause(): void {
    this.batcher.pause();
  }

  resume(): void {
    this.batcher.resume();
  }

  /** Next sequence number to be used. */
  get nextSeq(): bigint {
    return this.batcher.nextSeq;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.batcher.close();
    await this.sending.catch(() => {});
    this.socket.close();
  }
}
