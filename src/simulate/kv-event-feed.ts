/**
 * KV events inside the fleet simulator, with configurable lag and loss. Every engine a
 * router subscribes to publishes its cache changes through the engine model's batcher (the
 * same vLLM messages the HTTP simulator sends over ZMQ: one per engine step, numbered from
 * 0), and each subscriber receives the encoded frames `lagMs` (± `jitterMs`, order kept, as
 * one ZMQ stream keeps it) after the step, or never, with probability `loss` per message
 * and subscriber. The router's side is its own per-stream handling (KvEventStream), so a
 * lost message is a sequence gap it sees and resyncs on, exactly as for a dropped ZMQ
 * message.
 *
 * Why a feed per run rather than per policy: the batcher is the engine's cache listener (one
 * per cache), and several router replicas subscribe to the same engine, each with its own
 * losses and its own order.
 */
import { KvEventBatcher, type KvEventFrames } from './engine/kv-event-batcher.js';
import type { BatchingEngine } from './engine/batching-engine.js';
import type { KvEventModel } from './types.js';
import { seededRng, type Rng } from '../util/rng.js';
import type { VirtualTime } from './virtual-time.js';

interface Subscriber {
  readonly receive: (frames: KvEventFrames) => void;
  /** Virtual time of the last delivery scheduled (later messages never overtake it). */
  lastAtMs: number;
}

export interface KvEventFeedStats {
  readonly published: number;
  readonly delivered: number;
  readonly lost: number;
}

export class KvEventFeed {
  private readonly subscribers = new Map<number, Subscriber[]>();
  private readonly rng: Rng;
  private readonly lagMs: number;
  private readonly jitterMs: number;
  private readonly loss: number;
  private published = 0;
  private delivered = 0;
  private lost = 0;

  constructor(
    private readonly time: VirtualTime,
    private readonly engines: readonly { readonly engine: BatchingEngine }[],
    model: KvEventModel,
    seed: number,
  ) {
    this.lagMs = Math.max(0, model.lagMs ?? 0);
    this.jitterMs = Math.min(this.lagMs, Math.max(0, model.jitterMs ?? 0));
    this.loss = Math.min(1, Math.max(0, model.loss ?? 0));
    this.rng = seededRng(seed ^ 0x6b7e11);
  }

  /** Engine `index`'s messages go to `receive` from now on (the engine starts publishing at its first subscriber). */
  subscribe(index: number, receive: (frames: KvEventFrames) => void): void {
    const e = this.engines[index];
    if (e === undefined) throw new RangeError(`no engine ${index}`);
    let subs = this.subscribers.get(index);
    if (subs === undefined) {
      subs = [];
      this.subscribers.set(index, subs);
      const list = subs;
      new KvEventBatcher({
        blockSize: e.engine.config.blockSize,
        defer: (fn) => this.time.schedule(0, fn),
        nowSeconds: () => this.time.nowMs() / 1000,
        send: (frames) => this.send(list, frames),
      }).attach(e.engine.kvCache);
    }
    subs.push({ receive, lastAtMs: 0 });
  }

  stats(): KvEventFeedStats {
    return { published: this.published, delivered: this.delivered, lost: this.lost };
  }

  private send(subs: readonly Subscriber[], frames: KvEventFrames): void {
    this.published++;
    const now = this.time.nowMs();
    for (const s of subs) {
      if (this.loss > 0 && this.rng.next() < this.loss) {
        this.lost++;
        continue;
      }
      const delay = this.jitterMs > 0 ? this.lagMs + (this.rng.next() * 2 - 1) * this.jitterMs : this.lagMs;
      const at = Math.max(now + delay, s.lastAtMs);
      s.lastAtMs = at;
      this.delivered++;
      this.time.at(at, () => s.receive(frames));
    }
  }
}
