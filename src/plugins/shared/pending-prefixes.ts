/**
 * Prefix blocks the router has sent to an engine whose prefill has not finished there yet.
 *
 * Why: the router's prefix index counts a request's blocks as held by its engine from the
 * moment it is routed, but an engine's prefix cache holds only blocks it has computed. A
 * request that matches blocks still being prefilled by an earlier request is admitted while
 * they are in flight and computes them again (vLLM caches a block once its step has run; a
 * request scheduled with the same step, or with the last chunk, does not find it). Counting
 * such blocks as cached made the TTFT model send a burst of siblings of one cold prompt to
 * the engine prefilling it (all 48 of a burst on one of 8 engines; on the fleet simulator's
 * hot-prefix cell the siblings waited 0.7–0.8 s behind the first prefill where the model
 * said 0.3–0.4 s).
 *
 * What it keeps: per engine, each routed request's new blocks (those past what that engine
 * was believed to hold when it was routed) keyed by chained block hash, until the request is
 * past its prefill (its prefill lane entry says so). A block key names its whole prefix
 * (hashes are chained), so looking up the last block a request matches tells whether that
 * match reaches into another request's unfinished prefill, and from which block on.
 * Records leave in routing order (an engine prefills first come, first served): O(new
 * blocks) per routed request, one lookup per candidate and decision.
 */
import type { BlockHashes } from '../../prefix-cache/block-hasher.js';
import type { LaneEntry } from './prefill-lanes.js';

interface PendingRecord {
  readonly lane: LaneEntry;
  /** The first block this request brings (blocks before it were there already). */
  readonly fromBlock: number;
  readonly keys: readonly number[];
}

interface EnginePending {
  readonly byKey: Map<number, PendingRecord>;
  /** Records in routing order; those before `head` are gone. */
  readonly order: PendingRecord[];
  head: number;
}

/** A 53-bit map key from the block's 64-bit hash (21 high bits and the 32 low ones). */
function keyOf(h: BlockHashes, i: number): number {
  return (h.hi[i]! & 0x1f_ffff) * 0x1_0000_0000 + (h.lo[i]! >>> 0);
}

const done = (r: PendingRecord): boolean => r.lane.prefilled || r.lane.finished;

export class PendingPrefixes {
  private readonly engines = new Map<string, EnginePending>();

  /** A request routed to `endpointId` brings blocks `fromBlock..toBlock` of `h` there; `lane` is its prefill. */
  add(endpointId: string, h: BlockHashes, fromBlock: number, toBlock: number, lane: LaneEntry): void {
    let e = this.engines.get(endpointId);
    if (e === undefined) {
      e = { byKey: new Map(), order: [], head: 0 };
      this.engines.set(endpointId, e);
    }
    this.prune(e);
    const to = Math.min(toBlock, h.count);
    if (fromBlock >= to) return;
    const keys: number[] = [];
    const rec: PendingRecord = { lane, fromBlock, keys };
    for (let i = fromBlock; i < to; i++) {
      const k = keyOf(h, i);
      keys.push(k);
      e.byKey.set(k, rec);
    }
    e.order.push(rec);
  }

  /**
   * Where the first `matched` blocks of `h` on the engine reach into a prefill still under
   * way: the first block of that request's part (the blocks before it are computed), or -1
   * when the match is all computed (as far as the prefill lanes know).
   */
  pendingFrom(endpointId: string, h: BlockHashes, matched: number): number {
    if (matched <= 0 || matched > h.count) return -1;
    const e = this.engines.get(endpointId);
    if (e === undefined) return -1;
    const r = e.byKey.get(keyOf(h, matched - 1));
    return r === undefined || done(r) ? -1 : Math.min(r.fromBlock, matched);
  }

  /** Forgets engines not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const id of [...this.engines.keys()]) if (!keep.has(id)) this.engines.delete(id);
  }

  /** Records still tracked on the engine (for tests and debug). */
  size(endpointId: string): number {
    const e = this.engines.get(endpointId);
    return e === undefined ? 0 : e.order.length - e.head;
  }

  /** Drops the records at the front whose prefill is over (routing order is prefill order). */
  private prune(e: EnginePending): void {
    while (e.head < e.order.length && done(e.order[e.head]!)) {
      const r = e.order[e.head++]!;
      for (const k of r.keys) if (e.byKey.get(k) === r) e.byKey.delete(k);
    }
    if (e.head > 256 && e.head * 2 > e.order.length) {
      e.order.splice(0, e.head);
      e.head = 0;
    }
  }
}
