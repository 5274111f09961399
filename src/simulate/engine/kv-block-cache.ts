/**
 * The engine's KV-cache block pool, modelled on vLLM's prefix cache:
 * - capacity is a fixed number of blocks; a running request holds (references) the
 *   blocks of its prompt plus unhashed blocks for a partial tail and decoded tokens;
 * - only full prompt blocks carry a chained hash and can be shared; a block counts as a
 *   cache hit only once it has been computed (its prefill finished);
 * - blocks nobody references but that hold computed KV stay resident in an LRU free
 *   queue and are evicted oldest-first when space is needed; like vLLM, a finished
 *   request's blocks are queued tail-first so its tail is evicted before its head;
 * - usage (vllm:kv_cache_usage_perc) = referenced blocks / capacity: cached-but-free
 *   blocks count as free, exactly as in vLLM.
 */

export interface CacheBlock {
  readonly hash: number;
  refs: number;
  computed: boolean;
  /** Dropped from the index by a cache reset while still referenced. */
  detached: boolean;
}

/** Observer of the cache's content, for the KV-event publisher (kv-event-publisher.ts). */
export interface KvCacheListener {
  /** Blocks `from..to-1` of `alloc` just became cached (computed); their prompt tokens are in `alloc.tokens`. */
  stored(alloc: BlockAllocation, from: number, to: number): void;
  /** A cached block left the cache. */
  removed(hash: number): void;
  /** Everything cached was dropped. */
  cleared(): void;
}

/** What one request holds; pass it back to release()/markComputed()/grow(). */
export interface BlockAllocation {
  /** Hashed (shareable) prompt blocks in prompt order. */
  readonly blocks: CacheBlock[];
  /** The prompt's token ids (for KV events), when the caller passed them. */
  readonly tokens?: readonly number[];
  /** Unhashed blocks (partial prompt tail, decoded tokens). */
  anon: number;
  released: boolean;
}

export class KvBlockCache {
  private readonly byHash = new Map<number, CacheBlock>();
  /** Evictable blocks in LRU order (first = evicted next). */
  private readonly free = new Map<number, CacheBlock>();
  private referenced = 0;
  /** Referenced blocks that clear() removed from the index (still resident until released). */
  private detachedRefs = 0;
  private anon = 0;
  private evictionsTotal = 0;
  /** Set by the KV-event publisher. */
  listener: KvCacheListener | undefined;

  constructor(private cap: number) {
    if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`kv cache capacity must be a positive integer, got ${cap}`);
  }

  get capacity(): number {
    return this.cap;
  }
  /** Blocks held by running requests. */
  get usedBlocks(): number {
    return this.referenced + this.anon;
  }
  /** Computed blocks nobody holds that a new request could hit. */
  get freeCachedBlocks(): number {
    return this.free.size;
  }
  /** Blocks that can be handed out right now (never-used plus evictable). */
  get availableBlocks(): number {
    return Math.max(0, this.cap - this.usedBlocks);
  }
  get usage(): number {
    return Math.min(1, this.usedBlocks / this.cap);
  }
  get evictions(): number {
    return this.evictionsTotal;
  }

  /** Whether a computed block with this key is resident (a hit for a new request). */
  has(hash: number): boolean {
    return this.byHash.get(hash)?.computed === true;
  }

  /** Leading blocks of `hashes` that are resident and computed, at most `maxBlocks`. */
  matchPrefix(hashes: readonly number[], maxBlocks = hashes.length): number {
    const lim = Math.min(maxBlocks, hashes.length);
    let n = 0;
    while (n < lim && this.byHash.get(hashes[n]!)?.computed === true) n++;
    return n;
  }

  /**
   * References the blocks for `hashes` (sharing resident ones) plus `anonBlocks` unhashed
   * blocks. Returns null, changing nothing, when that does not fit even after evicting.
   */
  allocate(hashes: readonly number[], anonBlocks: number, tokens?: readonly number[]): BlockAllocation | null {
    let reuseFree = 0;
    let fresh = 0;
    for (const h of hashes) {
      const b = this.byHash.get(h);
      if (!b) fresh++;
      else if (b.refs === 0) reuseFree++;
    }
    if (this.usedBlocks + reuseFree + fresh + anonBlocks > this.cap) return null;

    const blocks: CacheBlock[] = [];
    for (const h of hashes) {
      let b = this.byHash.get(h);
      if (!b) {
        b = { hash: h, refs: 0, computed: false, detached: false };
        this.byHash.set(h, b);
      }
      if (b.refs === 0) {
        this.free.delete(h);
        this.referenced++;
      }
      b.refs++;
      blocks.push(b);
    }
    this.anon += anonBlocks;
    this.evictToFit();
    return { blocks, anon: anonBlocks, released: false, ...(tokens !== undefined ? { tokens } : {}) };
  }

  /** Adds `n` unhashed blocks to an allocation; false (no change) if they do not fit. */
  grow(alloc: BlockAllocation, n: number): boolean {
    if (alloc.released) return false;
    if (this.usedBlocks + n > this.cap) return false;
    this.anon += n;
    alloc.anon += n;
    this.evictToFit();
    return true;
  }

  /** Marks the first `nBlocks` hashed blocks of an allocation as computed (hits from now on). */
  markComputed(alloc: BlockAllocation, nBlocks: number): void {
    const lim = Math.min(nBlocks, alloc.blocks.length);
    let run = -1; // start of the current run of newly cached blocks (one stored event each)
    for (let i = 0; i <= lim; i++) {
      const b = i < lim ? alloc.blocks[i]! : undefined;
      const fresh = b !== undefined && !b.computed && !b.detached;
      if (b !== undefined) b.computed = true;
      if (fresh && run < 0) run = i;
      if (!fresh && run >= 0) {
        this.listener?.stored(alloc, run, i);
        run = -1;
      }
    }
  }

  /** Drops a request's references. Computed blocks stay cached (tail first in the LRU). */
  release(alloc: BlockAllocation): void {
    if (alloc.released) return;
    alloc.released = true;
    this.anon -= alloc.anon;
    for (let i = alloc.blocks.length - 1; i >= 0; i--) {
      const b = alloc.blocks[i]!;
      if (--b.refs > 0) continue;
      this.referenced--;
      if (b.detached) {
        this.detachedRefs--;
        continue;
      }
      if (b.computed) this.free.set(b.hash, b);
      else this.byHash.delete(b.hash);
    }
  }

  /** Changes capacity, evicting free blocks as needed. Running requests keep their blocks. */
  resize(capacity: number): void {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`kv cache capacity must be a positive integer, got ${capacity}`);
    this.cap = capacity;
    this.evictToFit();
  }

  /** Forgets all cached content. Blocks held by running requests stay allocated but are no longer shareable. */
  clear(): void {
    this.listener?.cleared();
    for (const b of this.byHash.values()) {
      if (b.refs > 0) {
        b.detached = true;
        this.detachedRefs++;
      }
    }
    this.byHash.clear();
    this.free.clear();
  }

  /** Keys of evictable blocks in eviction order (tests and debugging). */
  evictionOrder(): number[] {
    return [...this.free.keys()];
  }

  private evictToFit(): void {
    // Resident = indexed blocks + detached-but-held + unhashed; referenced blocks are never evicted.
    let over = this.byHash.size + this.detachedRefs + this.anon - this.cap;
    for (const h of this.free.keys()) {
      if (over <= 0) break;
      this.free.delete(h);
      this.byHash.delete(h);
      this.evictionsTotal++;
      this.listener?.removed(h);
      over--;
    }
  }
}
