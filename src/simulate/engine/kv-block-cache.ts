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
 *
 * Why no Map: a 256-engine fleet run does tens of millions of block lookups. Block keys are
 * 53-bit numbers, which a Map boxes on every call, and the LRU queue as a Map (delete, then
 * set to move a block to the back; iterate from the front to evict) leaves deleted entries
 * that every eviction walks over again. So the index is an open-addressing table on a
 * Float64Array (BlockTable) and the free queue a doubly linked list through the blocks:
 * the same contents and the same eviction order, at a fraction of the cost.
 */

/** One KV block: its chained key, holders, state and its place in the free (LRU) queue. */
export class CacheBlock {
  refs = 0;
  computed = false;
  /** Dropped from the index by a cache reset while still referenced. */
  detached = false;
  /** In the free (evictable) queue. */
  queued = false;
  older: CacheBlock | null = null;
  newer: CacheBlock | null = null;
  constructor(readonly hash: number) {}
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
  private readonly byHash = new BlockTable(0);
  /** Evictable blocks in LRU order: `oldest` is evicted next, `newest` was freed last. */
  private oldest: CacheBlock | null = null;
  private newest: CacheBlock | null = null;
  private freeCount = 0;
  private referenced = 0;
  /** Referenced blocks that clear() removed from the index (still resident until released). */
  private detachedRefs = 0;
  private anon = 0;
  private evictionsTotal = 0;
  /** Set by the KV-event publisher. */
  listener: KvCacheListener | undefined;

  constructor(private cap: number) {
    if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`kv cache capacity must be a positive integer, got ${cap}`);
    this.byHash.reserve(cap);
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
    return this.freeCount;
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
    for (let i = 0; i < hashes.length; i++) {
      const b = this.byHash.get(hashes[i]!);
      if (b === undefined) fresh++;
      else if (b.refs === 0) reuseFree++;
    }
    if (this.usedBlocks + reuseFree + fresh + anonBlocks > this.cap) return null;

    const blocks: CacheBlock[] = [];
    for (let i = 0; i < hashes.length; i++) {
      const h = hashes[i]!;
      let b = this.byHash.get(h);
      if (b === undefined) {
        b = new CacheBlock(h);
        this.byHash.set(h, b);
      }
      if (b.refs === 0) {
        if (b.queued) this.unqueue(b);
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
    const blocks = alloc.blocks;
    for (let i = blocks.length - 1; i >= 0; i--) {
      const b = blocks[i]!;
      if (--b.refs > 0) continue;
      this.referenced--;
      if (b.detached) {
        this.detachedRefs--;
        continue;
      }
      if (b.computed) this.enqueue(b);
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
    this.byHash.forEach((b) => {
      if (b.refs > 0) {
        b.detached = true;
        this.detachedRefs++;
      }
      b.queued = false;
      b.older = b.newer = null;
    });
    this.byHash.clear();
    this.oldest = this.newest = null;
    this.freeCount = 0;
  }

  /** Keys of evictable blocks in eviction order (tests and debugging). */
  evictionOrder(): number[] {
    const out: number[] = [];
    for (let b = this.oldest; b !== null; b = b.newer) out.push(b.hash);
    return out;
  }

  private evictToFit(): void {
    // Resident = indexed blocks + detached-but-held + unhashed; referenced blocks are never evicted.
    let over = this.byHash.size + this.detachedRefs + this.anon - this.cap;
    while (over > 0 && this.oldest !== null) {
      const b = this.oldest;
      this.unqueue(b);
      this.byHash.delete(b.hash);
      this.evictionsTotal++;
      this.listener?.removed(b.hash);
      over--;
    }
  }

  /** Appends a block nobody holds to the LRU queue (newest end). */
  private enqueue(b: CacheBlock): void {
    b.queued = true;
    b.older = this.newest;
    b.newer = null;
    if (this.newest !== null) this.newest.newer = b;
    else this.oldest = b;
    this.newest = b;
    this.freeCount++;
  }

  private unqueue(b: CacheBlock): void {
    if (b.older !== null) b.older.newer = b.newer;
    else this.oldest = b.newer;
    if (b.newer !== null) b.newer.older = b.older;
    else this.newest = b.older;
    b.older = b.newer = null;
    b.queued = false;
    this.freeCount--;
  }
}

/**
 * Block key → block: linear probing over a power-of-two table with keys unboxed in a
 * Float64Array, deletion by backward shift (no tombstones, so probe runs stay short under
 * the cache's constant insert/delete churn). Sized for twice the pool; it grows only past
 * three quarters full (a pool briefly indexes one request more than its capacity before it
 * evicts, which must not double the table).
 */
class BlockTable {
  private keys = new Float64Array(16);
  private vals: (CacheBlock | undefined)[] = emptySlots(16);
  private mask = 15;
  private shift = 28;
  size = 0;

  constructor(expected: number) {
    this.reserve(expected);
  }

  /** Sizes the table for `n` entries without growing. */
  reserve(n: number): void {
    let slots = this.vals.length;
    while (slots < 2 * n) slots *= 2;
    if (slots !== this.vals.length) this.rehash(slots);
  }

  get(key: number): CacheBlock | undefined {
    const keys = this.keys;
    const vals = this.vals;
    const mask = this.mask;
    for (let i = this.slot(key); ; i = (i + 1) & mask) {
      const v = vals[i];
      if (v === undefined || keys[i] === key) return v;
    }
  }

  /** Inserts or replaces `key`. */
  set(key: number, b: CacheBlock): void {
    if (4 * (this.size + 1) > 3 * this.vals.length) this.rehash(2 * this.vals.length);
    const mask = this.mask;
    let i = this.slot(key);
    while (this.vals[i] !== undefined) {
      if (this.keys[i] === key) {
        this.vals[i] = b;
        return;
      }
      i = (i + 1) & mask;
    }
    this.keys[i] = key;
    this.vals[i] = b;
    this.size++;
  }

  delete(key: number): void {
    const keys = this.keys;
    const vals = this.vals;
    const mask = this.mask;
    let i = this.slot(key);
    for (;;) {
      if (vals[i] === undefined) return;
      if (keys[i] === key) break;
      i = (i + 1) & mask;
    }
    // Backward shift: pull later entries of the run into the hole unless their home slot lies after it.
    for (let j = (i + 1) & mask; vals[j] !== undefined; j = (j + 1) & mask) {
      const home = this.slot(keys[j]!);
      const stays = i <= j ? i < home && home <= j : i < home || home <= j;
      if (stays) continue;
      keys[i] = keys[j]!;
      vals[i] = vals[j];
      i = j;
    }
    vals[i] = undefined;
    this.size--;
  }

  clear(): void {
    this.vals.fill(undefined);
    this.size = 0;
  }

  forEach(fn: (b: CacheBlock) => void): void {
    for (const v of this.vals) if (v !== undefined) fn(v);
  }

  /** Fibonacci hashing of both 32-bit halves (block keys are well mixed; small test keys are not). */
  private slot(key: number): number {
    const lo = key >>> 0;
    const hi = (key / 4294967296) >>> 0;
    return Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  private rehash(slots: number): void {
    const oldKeys = this.keys;
    const oldVals = this.vals;
    this.keys = new Float64Array(slots);
    this.vals = emptySlots(slots);
    this.mask = slots - 1;
    this.shift = 32 - Math.log2(slots);
    this.size = 0;
    for (let i = 0; i < oldVals.length; i++) {
      const v = oldVals[i];
      if (v !== undefined) this.set(oldKeys[i]!, v);
    }
  }
}

/** A packed array of `n` empty slots (a holey one would cost a hole check per read). */
function emptySlots(n: number): (CacheBlock | undefined)[] {
  const out: (CacheBlock | undefined)[] = [];
  for (let i = 0; i < n; i++) out.push(undefined);
  return out;
}
