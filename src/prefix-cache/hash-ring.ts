/**
 * A consistent-hash ring with virtual nodes over dense endpoint indexes.
 *
 * Why: the `prefix-hash` baseline (and later bounded-load hashing) maps a request's prefix
 * hash to an endpoint so that the same prefix always lands on the same engine, and adding or
 * removing an endpoint moves only ~1/n of the keys. Virtual nodes (many points per endpoint)
 * even out the arc lengths. Points are sorted in a Uint32Array and looked up by binary
 * search; walking clockwise from the key yields a deterministic preference order, which
 * gives the fallbacks and lets callers skip endpoints that are not eligible right now.
 */
import { hashString32 } from './xxhash.js';

export interface RingMember {
  /** Dense endpoint index. */
  readonly index: number;
  /** Stable identity hashed into the ring points (e.g. `ip:port`). */
  readonly id: string;
}

const RING_SEED = 0x3c6ef372;

export class HashRing {
  private readonly points: Uint32Array;
  private readonly owners: Int32Array;
  private readonly members: number;

  constructor(members: readonly RingMember[], virtualNodes: number) {
    if (!Number.isInteger(virtualNodes) || virtualNodes < 1) throw new RangeError(`virtualNodes must be >= 1, got ${virtualNodes}`);
    const total = members.length * virtualNodes;
    const pts = new Array<{ p: number; o: number }>(total);
    let k = 0;
    for (const m of members) {
      for (let v = 0; v < virtualNodes; v++) pts[k++] = { p: hashString32(`${m.id}#${v}`, RING_SEED) >>> 0, o: m.index };
    }
    // Ties (astronomically rare) are broken by owner so the ring does not depend on input order.
    pts.sort((x, y) => x.p - y.p || x.o - y.o);
    this.points = new Uint32Array(total);
    this.owners = new Int32Array(total);
    for (let i = 0; i < total; i++) {
      this.points[i] = pts[i]!.p;
      this.owners[i] = pts[i]!.o;
    }
    this.members = members.length;
  }

  get size(): number {
    return this.points.length;
  }

  /**
   * Walks clockwise from `key` (a 32-bit hash) and returns up to `limit` distinct endpoint
   * indexes accepted by `accept`, in ring order. Empty if the ring is empty or nothing is
   * accepted.
   */
  walk(key: number, accept: (index: number) => boolean, limit: number): number[] {
    const out: number[] = [];
    const n = this.points.length;
    if (n === 0 || limit <= 0) return out;
    const k = key >>> 0;
    // First point >= k (wrapping to 0).
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.points[mid]! < k) lo = mid + 1;
      else hi = mid;
    }
    const seen = new Set<number>();
    for (let step = 0; step < n && out.length < limit && seen.size < this.members; step++) {
      const owner = this.owners[(lo + step) % n]!;
      if (seen.has(owner)) continue;
      seen.add(owner);
      if (accept(owner)) out.push(owner);
    }
    return out;
  }
}
