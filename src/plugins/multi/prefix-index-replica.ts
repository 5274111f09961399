/**
 * The prefix-cache plugin's replication seam: its index's local changes, named by endpoint
 * id, for whoever shares them (src/replication/), and the way back in for changes another
 * router replica made.
 *
 * Why endpoint ids: each replica numbers its endpoints in the order it discovered them, so
 * an index (`Endpoint.index`) means different engines on different replicas; the id
 * (`ip:port`) means the same one everywhere. Why a seam on the plugin and not the index:
 * the plugin knows which changes are facts about an engine's cache worth telling others
 * (routing inserts, calibration removals, restart clears) and which are this replica's
 * bookkeeping (an endpoint leaving its registry: every replica sees that itself).
 *
 * Remote changes are applied through the same index operations as local ones and are not
 * echoed back to the observers.
 */
import type { Endpoint } from '../../core/types.js';
import type { BlockHashes } from '../../prefix-cache/block-hasher.js';
import type { PrefixIndex, PrefixIndexChange } from '../../prefix-cache/prefix-index.js';
import { serviceKey } from '../../framework/plugin-api.js';

/** One change to an endpoint's entries. */
export interface IndexDelta {
  readonly kind: 'insert' | 'remove' | 'clear';
  /** `Endpoint.id` (`ip:port`). */
  readonly endpointId: string;
  /** insert: the chain's first blocks, now held; remove: blocks no longer held; clear: none. */
  readonly keys: BlockHashes;
}

/** Per-endpoint content summary (measurement: compare replicas' views). */
export interface EndpointIndexDigest {
  readonly endpointId: string;
  readonly blocks: number;
  /** Order-independent digest of the held keys (XOR of lo and of hi halves, as hex). */
  readonly xor: string;
}

export interface PrefixIndexReplica {
  /** Block size of the keys (replicas with a different one must not mix keys). */
  readonly blockChars: number;
  /** Observes local changes; `keys` aliases a reused buffer (copy before returning). */
  observe(listener: (delta: IndexDelta) => void): () => void;
  /** Applies another replica's change. False when the endpoint is not a member here. */
  apply(delta: IndexDelta): boolean;
  /** Every member's block count and digest. */
  digest(): EndpointIndexDigest[];
  /** The keys endpoint `endpointId` holds (measurement; undefined for a non-member). */
  keysOf(endpointId: string): BlockHashes | undefined;
}

/** The first prefix-cache instance's replication seam. */
export const PREFIX_INDEX_REPLICA = serviceKey<PrefixIndexReplica>('prefix-index-replica');

const NO_KEYS: BlockHashes = { count: 0, lo: new Int32Array(0), hi: new Int32Array(0) };

export class PrefixIndexReplicaPort implements PrefixIndexReplica {
  private readonly listeners = new Set<(delta: IndexDelta) => void>();
  private readonly ids: string[] = [];
  private readonly byId = new Map<string, number>();
  /** Set while applying a remote change or doing local bookkeeping: nothing is observed. */
  private quiet = false;

  constructor(
    private readonly index: PrefixIndex,
    readonly blockChars: number,
    members: readonly Endpoint[],
  ) {
    this.setMembers(members);
  }

  /** The plugin's membership view (called on every change, before departures are evicted). */
  setMembers(members: readonly Endpoint[]): void {
    this.ids.length = 0;
    this.byId.clear();
    for (const e of members) {
      this.ids[e.index] = e.id;
      this.byId.set(e.id, e.index);
    }
  }

  observe(listener: (delta: IndexDelta) => void): () => void {
    this.listeners.add(listener);
    this.index.observer = (c) => this.onChange(c);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.index.observer = undefined;
    };
  }

  /** Runs `fn` (index bookkeeping of this replica only) without telling the observers. */
  unobserved(fn: () => void): void {
    const was = this.quiet;
    this.quiet = true;
    try {
      fn();
    } finally {
      this.quiet = was;
    }
  }

  apply(delta: IndexDelta): boolean {
    const e = this.byId.get(delta.endpointId);
    if (e === undefined || e >= this.index.endpointCount) return false;
    this.unobserved(() => {
      if (delta.kind === 'insert') this.index.insert(e, delta.keys);
      else if (delta.kind === 'remove') this.index.removeBlocks(e, 0, delta.keys);
      else this.index.evictEndpoint(e);
    });
    return true;
  }

  digest(): EndpointIndexDigest[] {
    const out: EndpointIndexDigest[] = [];
    for (const [endpointId, e] of this.byId) {
      if (e >= this.index.endpointCount) continue;
      let lo = 0;
      let hi = 0;
      this.index.forEachKey(e, (l, h) => {
        lo ^= l;
        hi ^= h;
      });
      out.push({ endpointId, blocks: this.index.size(e), xor: keyHex(lo, hi) });
    }
    return out.sort((a, b) => (a.endpointId < b.endpointId ? -1 : 1));
  }

  keysOf(endpointId: string): BlockHashes | undefined {
    const e = this.byId.get(endpointId);
    if (e === undefined || e >= this.index.endpointCount) return undefined;
    const n = this.index.size(e);
    const lo = new Int32Array(n);
    const hi = new Int32Array(n);
    let i = 0;
    this.index.forEachKey(e, (l, h) => {
      lo[i] = l;
      hi[i++] = h;
    });
    return { count: i, lo, hi };
  }

  private onChange(c: PrefixIndexChange): void {
    if (this.quiet || this.listeners.size === 0) return;
    const endpointId = this.ids[c.e];
    if (endpointId === undefined) return;
    let keys: BlockHashes;
    if (c.kind === 'insert') keys = c.blocks === c.h.count ? c.h : { count: c.blocks, lo: c.h.lo, hi: c.h.hi };
    else if (c.kind === 'remove') {
      const from = Math.min(c.fromBlock, c.h.count);
      keys = from === 0 ? c.h : { count: c.h.count - from, lo: c.h.lo.subarray(from, c.h.count), hi: c.h.hi.subarray(from, c.h.count) };
    } else keys = NO_KEYS;
    if (keys.count === 0 && c.kind !== 'clear') return;
    const delta: IndexDelta = { kind: c.kind, endpointId, keys };
    for (const l of this.listeners) {
      try {
        l(delta);
      } catch {
        // an observer's failure never reaches the routing path
      }
    }
  }
}

/** A 64-bit block key as 16 hex digits (high half first). */
export function keyHex(lo: number, hi: number): string {
  return (hi >>> 0).toString(16).padStart(8, '0') + (lo >>> 0).toString(16).padStart(8, '0');
}
