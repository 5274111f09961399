/**
 * An approximate model of every endpoint's prefix (KV) cache, built only from the router's
 * own routing history: "which chained block hashes did we send to which endpoint lately".
 *
 * Why this shape:
 * - One global open-addressing hash table (linear probing, load ≤ 1/2, backward-shift
 *   deletion so there are no tombstones) keyed by the 64-bit chained block hash
 *   (two int32 halves). Each slot carries a bitmask of the endpoints believed to hold the
 *   block, so one probe answers for all endpoints at once.
 * - Per-endpoint LRU lists bounded by a capacity in blocks, so the model forgets what the
 *   engine would have evicted. An (endpoint, block) entry lives in a pool of parallel typed
 *   arrays (slot, next-in-slot chain, LRU prev/next, endpoint, generation); evicting clears
 *   the endpoint's bit and frees the slot when no endpoint holds the block any more.
 * - Everything is typed arrays (no per-entry objects): 24 bytes per entry plus 16 bytes
 *   per slot (≤ 1/2 full), and nothing for the GC to trace. Arrays grow by doubling. A slot's
 *   key halves, chain head and mask words are interleaved in one Int32Array (stride 3 + words),
 *   and so are an entry's six fields, so a probe or an LRU move touches one cache line per
 *   record instead of one per field.
 * - Insertion walks the request's blocks from the last to the first, so within a request
 *   the first blocks are the most recently used and the deepest blocks are evicted first,
 *   as engines do (vLLM frees a request's blocks tail first). A prefix therefore never
 *   loses its head while keeping its tail.
 * - Matching by galloping search instead of a walk. Because keys are chained, block i of a
 *   request names its whole path from the root; and because insertion touches a block
 *   before all of its ancestors and eviction takes the least recently used entry, an
 *   endpoint that holds a block also holds its parent (the parent is always more recent,
 *   so it is evicted later). Each endpoint's set is thus *prefix-closed*, "endpoint e holds
 *   block i of this request" is monotone in i (true…true false…false), and so is the set
 *   of endpoints holding block i. The match finds where that set shrinks by galloping
 *   (probe pos+1, +2, +4, … then bisect): O(t·log n) probes for t distinct drop-out points
 *   instead of one probe per block — e.g. ~40 instead of 512 for a 32 KB prompt.
 * - The one operation that breaks prefix-closure is `removeBlocks` (calibration): it drops
 *   a chain's tail, and other prompts branching off that tail keep their deeper blocks as
 *   orphans. Such an endpoint is matched by the exact walk until every entry it held at the
 *   removal has been touched again (a touch re-inserts the whole prefix) or evicted.
 *   Detecting that is O(1): each endpoint has a generation bumped by `removeBlocks`, every
 *   touch stamps the entry with it, and since touches move entries to the MRU end, all
 *   entries are "post-removal" exactly when the LRU tail carries the current generation.
 *   Only endpoints with a removal since they were last seen clean are checked at all.
 *
 * Not thread-safe; the router is single-threaded. All methods are synchronous.
 */
import { RouterError } from '../core/errors.js';
import type { BlockHashes } from './block-hasher.js';

export interface PrefixIndexOptions {
  /** Number of endpoints (dense indexes 0..n-1). More can be added with `ensureEndpoints`. */
  readonly endpoints: number;
  /** Default per-endpoint capacity in blocks. */
  readonly capacityBlocks: number;
  /** Initial hash-table size hint in slots (rounded up to a power of two). */
  readonly initialSlots?: number;
}

/**
 * A mutation of the index as its observer sees it (replication): `insert` = the first
 * `blocks` keys of `h` were inserted for endpoint `e`; `remove` = keys `fromBlock..` of `h`
 * were removed; `clear` = everything endpoint `e` held was evicted. `h` aliases the
 * caller's buffer: copy what you keep before returning.
 */
export type PrefixIndexChange =
  | { readonly kind: 'insert'; readonly e: number; readonly h: BlockHashes; readonly blocks: number }
  | { readonly kind: 'remove'; readonly e: number; readonly h: BlockHashes; readonly fromBlock: number }
  | { readonly kind: 'clear'; readonly e: number };

export interface PrefixIndexStats {
  /** Distinct block hashes held by at least one endpoint. */
  readonly blocks: number;
  /** (endpoint, block) entries. */
  readonly entries: number;
  /** Bytes of all typed arrays the index allocated. */
  readonly bytes: number;
  /** Hash-table size in slots. */
  readonly slots: number;
  /** Allocated entry pool size. */
  readonly entryCapacity: number;
  /** Endpoints currently matched by the exact walk (orphans possible after removeBlocks). */
  readonly walkedEndpoints: number;
}

const MAX_ENDPOINTS = 0xffff;
const EMPTY = -1;
const ENTRY_STRIDE = 6;
const E_SLOT = 0;
const E_CHAIN = 1;
const E_PREV = 2;
const E_NEXT = 3;
const E_EP = 4;
const E_GEN = 5;

export class PrefixIndex {
  // Hash table: per slot `stride` int32s = [key lane A, key lane B, chain head, mask words…].
  // Chain head = first entry of the endpoints holding the block; EMPTY marks a free slot.
  // Mask bit e set ⇔ endpoint e holds the block.
  private slotMask: number;
  private table: Int32Array;
  private stride: number;
  private used = 0;
  private maskWords: number;

  // Entry pool: per (endpoint, block) entry ENTRY_STRIDE int32s = [slot, next entry in the
  // slot's chain, LRU prev, LRU next (doubles as the free-list link), endpoint, endpoint
  // generation at the last touch].
  private ents: Int32Array;
  private freeHead = EMPTY;
  private entTop = 0;
  private entries = 0;

  // Per endpoint.
  private n: number;
  /** Capacity of an endpoint nobody resized (`capacityBlocks`). */
  readonly defaultCapacity: number;
  private mru: Int32Array;
  private lru: Int32Array;
  private count: Int32Array;
  private cap: Int32Array;
  /** Bumped by removeBlocks; see the header ("prefix-closed"). */
  private gen: Int32Array;
  /** 1 for endpoints that may not be prefix-closed (removeBlocks since last verified). */
  private suspect: Uint8Array;
  private suspects = 0;

  // Reused match buffers (mask-sized ones have maskWords words).
  private matched: Uint32Array;
  private alive: Int32Array;
  private walkAlive: Int32Array;

  /**
   * Told about every insert, removal and endpoint clear (not about capacity changes or the
   * evictions capacity causes). Synchronous; must not throw or mutate this index.
   */
  observer: ((change: PrefixIndexChange) => void) | undefined = undefined;

  constructor(opts: PrefixIndexOptions) {
    checkCount('endpoints', opts.endpoints, MAX_ENDPOINTS);
    checkCount('capacityBlocks', opts.capacityBlocks, 0x3fffffff);
    this.n = opts.endpoints;
    this.defaultCapacity = opts.capacityBlocks;
    this.maskWords = Math.max(1, Math.ceil(this.n / 32));
    const slots = nextPow2(Math.max(64, opts.initialSlots ?? 1024));
    this.slotMask = slots - 1;
    this.stride = 3 + this.maskWords;
    this.table = newTable(slots, this.stride);
    this.ents = new Int32Array(Math.max(64, slots >>> 1) * ENTRY_STRIDE);
    this.mru = new Int32Array(this.n).fill(EMPTY);
    this.lru = new Int32Array(this.n).fill(EMPTY);
    this.count = new Int32Array(this.n);
    this.cap = new Int32Array(this.n).fill(this.defaultCapacity);
    this.gen = new Int32Array(this.n);
    this.suspect = new Uint8Array(this.n);
    this.matched = new Uint32Array(this.n);
    this.alive = new Int32Array(this.maskWords);
    this.walkAlive = new Int32Array(this.maskWords);
  }

  get endpointCount(): number {
    return this.n;
  }

  /** Grows the index to at least `n` endpoints (new ones start empty with the default capacity). */
  ensureEndpoints(n: number): void {
    checkCount('endpoints', n, MAX_ENDPOINTS);
    if (n <= this.n) return;
    const words = Math.max(1, Math.ceil(n / 32));
    if (words !== this.maskWords) {
      const slots = this.slotMask + 1;
      const oldStride = this.stride;
      const stride = 3 + words;
      const table = newTable(slots, stride);
      for (let s = 0; s < slots; s++) {
        for (let k = 0; k < oldStride; k++) table[s * stride + k] = this.table[s * oldStride + k]!;
      }
      this.table = table;
      this.stride = stride;
      this.maskWords = words;
      this.alive = new Int32Array(words);
      this.walkAlive = new Int32Array(words);
    }
    this.mru = growFill(this.mru, n, EMPTY);
    this.lru = growFill(this.lru, n, EMPTY);
    this.count = growFill(this.count, n, 0);
    this.cap = growFill(this.cap, n, this.defaultCapacity);
    this.gen = growFill(this.gen, n, 0);
    const suspect = new Uint8Array(n);
    suspect.set(this.suspect);
    this.suspect = suspect;
    this.matched = new Uint32Array(n);
    this.n = n;
  }

  /**
   * For every endpoint, how many leading blocks of `h` it is believed to hold.
   * Returns a buffer indexed by endpoint index (length = endpointCount), overwritten by the
   * next call. Read-only: does not refresh LRU positions (only routing does).
   * Prefix-closed endpoints (all, unless a recent `removeBlocks` left orphans) are matched by
   * galloping search, the others by the exact walk; the result equals `matchByWalk`.
   */
  match(h: BlockHashes): Uint32Array {
    const W = this.maskWords;
    const clean = this.alive;
    const dirty = this.walkAlive;
    let anyDirty = 0;
    this.allEndpoints(clean);
    dirty.fill(0);
    // Only endpoints with a removeBlocks since they were last seen prefix-closed need the
    // check (it reads their LRU tail: a cache miss, so not for every endpoint every time).
    for (let e = 0; this.suspects > 0 && e < this.n; e++) {
      if (this.suspect[e] === 0) continue;
      if (this.isPrefixClosed(e)) {
        this.suspect[e] = 0;
        this.suspects--;
        continue;
      }
      const bit = 1 << (e & 31);
      clean[e >>> 5] = clean[e >>> 5]! & ~bit;
      dirty[e >>> 5] = dirty[e >>> 5]! | bit;
      anyDirty = 1;
    }
    this.gallop(h, clean, W);
    if (anyDirty !== 0) this.walk(h, dirty, W);
    return this.matched;
  }

  /**
   * The same answer as `match`, by walking every block of `h` in order (one probe per block
   * until no endpoint is left). The reference for tests and benchmarks.
   */
  matchByWalk(h: BlockHashes): Uint32Array {
    const alive = this.walkAlive;
    this.allEndpoints(alive);
    this.walk(h, alive, this.maskWords);
    return this.matched;
  }

  /**
   * Records that endpoint `e` now holds the first `blocks` blocks of `h` (default all),
   * refreshing existing entries to most-recently-used and evicting its least recently used
   * entries beyond its capacity. Blocks beyond the capacity are not inserted.
   */
  insert(e: number, h: BlockHashes, blocks: number = h.count): void {
    this.checkEndpoint(e);
    if (this.observer !== undefined) this.observer({ kind: 'insert', e, h, blocks: Math.min(blocks, h.count) });
    const limit = Math.min(blocks, h.count, this.cap[e]!);
    const word = e >>> 5;
    const bit = 1 << (e & 31);
    for (let i = limit - 1; i >= 0; i--) {
      const slot = this.findOrCreate(h.lo[i]!, h.hi[i]!);
      const t = this.table;
      const b = slot * this.stride;
      const mi = b + 3 + word;
      if ((t[mi]! & bit) !== 0) {
        this.touch(e, this.entryOf(slot, e));
        continue;
      }
      const ent = this.allocEntry();
      this.ents[ent * ENTRY_STRIDE + E_EP] = e;
      this.ents[ent * ENTRY_STRIDE + E_SLOT] = slot;
      this.ents[ent * ENTRY_STRIDE + E_CHAIN] = t[b + 2]!;
      t[b + 2] = ent;
      t[mi] = t[mi]! | bit;
      this.pushMru(e, ent);
      this.count[e] = this.count[e]! + 1;
      this.entries++;
      if (this.count[e]! > this.cap[e]!) this.removeEntry(this.lru[e]!);
    }
  }

  /**
   * Forgets that endpoint `e` holds blocks `fromBlock..h.count-1` of `h` (for calibration:
   * the engine reported fewer cached tokens than predicted). Returns how many entries went.
   */
  removeBlocks(e: number, fromBlock: number, h: BlockHashes): number {
    this.checkEndpoint(e);
    if (this.observer !== undefined) this.observer({ kind: 'remove', e, h, fromBlock: Math.max(0, fromBlock) });
    const word = e >>> 5;
    const bit = 1 << (e & 31);
    let removed = 0;
    for (let i = Math.max(0, fromBlock); i < h.count; i++) {
      const slot = this.find(h.lo[i]!, h.hi[i]!);
      if (slot === EMPTY || (this.table[slot * this.stride + 3 + word]! & bit) === 0) continue;
      this.removeEntry(this.entryOf(slot, e));
      removed++;
    }
    // Other prompts branching off the removed blocks may keep deeper blocks (orphans).
    if (removed > 0) {
      this.gen[e] = (this.gen[e]! + 1) | 0;
      if (this.suspect[e] === 0) this.suspects++;
      this.suspect[e] = 1;
    }
    return removed;
  }

  /** Forgets everything endpoint `e` holds (endpoint removed, restarted or drained). */
  evictEndpoint(e: number): void {
    this.checkEndpoint(e);
    if (this.observer !== undefined) this.observer({ kind: 'clear', e });
    while (this.lru[e]! !== EMPTY) this.removeEntry(this.lru[e]!);
  }

  /** Sets endpoint `e`'s capacity in blocks, evicting its oldest entries if it shrank. */
  setCapacity(e: number, blocks: number): void {
    this.checkEndpoint(e);
    checkCount('capacity', blocks, 0x3fffffff);
    this.cap[e] = blocks;
    while (this.count[e]! > blocks) this.removeEntry(this.lru[e]!);
  }

  capacity(e: number): number {
    this.checkEndpoint(e);
    return this.cap[e]!;
  }

  /**
   * Calls `fn` with the key halves of every block endpoint `e` holds, most recently used
   * first (digests for measurement and tests; O(blocks of e)). `fn` must not mutate the index.
   */
  forEachKey(e: number, fn: (lo: number, hi: number) => void): void {
    this.checkEndpoint(e);
    for (let ent = this.mru[e]!; ent !== EMPTY; ent = this.ents[ent * ENTRY_STRIDE + E_NEXT]!) {
      const b = this.ents[ent * ENTRY_STRIDE + E_SLOT]! * this.stride;
      fn(this.table[b]!, this.table[b + 1]!);
    }
  }

  /** Number of blocks endpoint `e` is believed to hold. */
  size(e: number): number {
    this.checkEndpoint(e);
    return this.count[e]!;
  }

  stats(): PrefixIndexStats {
    const arrays = [
      this.table,
      this.ents,
      this.mru,
      this.lru,
      this.count,
      this.cap,
      this.gen,
      this.suspect,
      this.matched,
      this.alive,
      this.walkAlive,
    ];
    let walked = 0;
    for (let e = 0; e < this.n; e++) if (!this.isPrefixClosed(e)) walked++;
    let bytes = 0;
    for (const a of arrays) bytes += a.byteLength;
    return {
      blocks: this.used,
      entries: this.entries,
      bytes,
      slots: this.slotMask + 1,
      entryCapacity: this.ents.length / ENTRY_STRIDE,
      walkedEndpoints: walked,
    };
  }

  /**
   * Verifies every internal invariant (slot chains, masks, LRU lists, counts, probing).
   * O(size); meant for tests. Throws RouterError INTERNAL on the first violation.
   */
  checkInvariants(): void {
    const fail = (msg: string): never => {
      throw new RouterError('INTERNAL', `prefix index invariant: ${msg}`);
    };
    const W = this.maskWords;
    const t = this.table;
    const S = this.stride;
    let usedSlots = 0;
    let chained = 0;
    for (let s = 0; s <= this.slotMask; s++) {
      if (t[s * S + 2] === EMPTY) {
        for (let w = 0; w < W; w++) if (t[s * S + 3 + w] !== 0) fail(`free slot ${s} has mask bits`);
        continue;
      }
      usedSlots++;
      if (this.find(t[s * S]!, t[s * S + 1]!) !== s) fail(`slot ${s} unreachable by probing`);
      const seen = new Int32Array(W);
      for (let ent = t[s * S + 2]!; ent !== EMPTY; ent = this.ents[ent * ENTRY_STRIDE + E_CHAIN]!) {
        chained++;
        if (this.ents[ent * ENTRY_STRIDE + E_SLOT] !== s)
          fail(`entry ${ent} points to slot ${this.ents[ent * ENTRY_STRIDE + E_SLOT]} not ${s}`);
        const e = this.ents[ent * ENTRY_STRIDE + E_EP]!;
        const bit = 1 << (e & 31);
        if ((seen[e >>> 5]! & bit) !== 0) fail(`endpoint ${e} twice in slot ${s}`);
        seen[e >>> 5] = seen[e >>> 5]! | bit;
      }
      for (let w = 0; w < W; w++) if (seen[w] !== t[s * S + 3 + w]) fail(`slot ${s} mask disagrees with chain`);
    }
    if (usedSlots !== this.used) fail(`used ${this.used} but ${usedSlots} slots occupied`);
    let listed = 0;
    for (let e = 0; e < this.n; e++) {
      let c = 0;
      let prev = EMPTY;
      let stale = false;
      for (let ent = this.mru[e]!; ent !== EMPTY; ent = this.ents[ent * ENTRY_STRIDE + E_NEXT]!) {
        if (this.ents[ent * ENTRY_STRIDE + E_EP] !== e)
          fail(`entry ${ent} in endpoint ${e}'s LRU belongs to ${this.ents[ent * ENTRY_STRIDE + E_EP]}`);
        // Entries touched since the last removeBlocks form a run from the MRU end.
        const current = this.ents[ent * ENTRY_STRIDE + E_GEN] === this.gen[e];
        if (current && stale) fail(`endpoint ${e}: current-generation entry ${ent} behind an older one`);
        stale ||= !current;
        if (this.ents[ent * ENTRY_STRIDE + E_PREV] !== prev) fail(`broken LRU back link at entry ${ent}`);
        prev = ent;
        c++;
        if (c > this.ents.length / ENTRY_STRIDE) fail(`LRU cycle for endpoint ${e}`);
      }
      if (prev !== this.lru[e]) fail(`endpoint ${e} LRU tail mismatch`);
      if (!this.isPrefixClosed(e) && this.suspect[e] === 0) fail(`endpoint ${e} may hold orphans but is not marked for the walk`);
      if (c !== this.count[e]) fail(`endpoint ${e} count ${this.count[e]} but ${c} listed`);
      if (c > this.cap[e]!) fail(`endpoint ${e} over capacity`);
      listed += c;
    }
    let flagged = 0;
    for (let e = 0; e < this.n; e++) flagged += this.suspect[e]!;
    if (flagged !== this.suspects) fail(`suspects ${this.suspects} but ${flagged} flagged`);
    if (listed !== chained || listed !== this.entries) fail(`entries ${this.entries}, listed ${listed}, chained ${chained}`);
  }

  // ---- internals -------------------------------------------------------------------

  private checkEndpoint(e: number): void {
    if (!Number.isInteger(e) || e < 0 || e >= this.n) {
      throw new RouterError('INTERNAL', `prefix index: endpoint index ${e} out of range 0..${this.n - 1}`);
    }
  }

  /** Sets `mask` to all endpoints 0..n-1. */
  private allEndpoints(mask: Int32Array): void {
    for (let w = 0; w < this.maskWords; w++) {
      const bits = Math.min(32, this.n - w * 32);
      mask[w] = bits >= 32 ? -1 : bits <= 0 ? 0 : (1 << bits) - 1;
    }
  }

  /** True when every entry of `e` was touched since its last removeBlocks (see the header). */
  private isPrefixClosed(e: number): boolean {
    const tail = this.lru[e]!;
    return tail === EMPTY || this.ents[tail * ENTRY_STRIDE + E_GEN] === this.gen[e];
  }

  /**
   * Matched block counts for the endpoints in `alive` (modified), assuming each of them is
   * prefix-closed: from the last drop-out point, gallop forward until some endpoint no
   * longer holds the block, bisect to the first such block, record who dropped there, go on.
   */
  private gallop(h: BlockHashes, alive: Int32Array, W: number): void {
    const out = this.matched;
    const count = h.count;
    let good = -1; // every endpoint in `alive` holds blocks 0..good
    while (anyBit(alive, W)) {
      let bad = -1;
      for (let step = 1; good < count - 1; step *= 2) {
        const j = Math.min(good + step, count - 1);
        if (!this.holdsAll(h, j, alive, W)) {
          bad = j;
          break;
        }
        good = j;
      }
      if (bad < 0) break;
      while (bad - good > 1) {
        const mid = (good + bad) >>> 1;
        if (this.holdsAll(h, mid, alive, W)) good = mid;
        else bad = mid;
      }
      // Block `bad` is the first some endpoint lacks: those endpoints match `bad` blocks.
      const slot = this.find(h.lo[bad]!, h.hi[bad]!);
      const base = slot * this.stride + 3;
      for (let w = 0; w < W; w++) {
        const now = slot === EMPTY ? 0 : alive[w]! & this.table[base + w]!;
        recordBits(out, w, alive[w]! & ~now, bad);
        alive[w] = now;
      }
      good = bad;
    }
    for (let w = 0; w < W; w++) recordBits(out, w, alive[w]!, count);
  }

  /** Whether every endpoint in `alive` holds block j of `h`. */
  private holdsAll(h: BlockHashes, j: number, alive: Int32Array, W: number): boolean {
    const slot = this.find(h.lo[j]!, h.hi[j]!);
    if (slot === EMPTY) return false;
    const base = slot * this.stride + 3;
    for (let w = 0; w < W; w++) if ((this.table[base + w]! & alive[w]!) !== alive[w]) return false;
    return true;
  }

  /**
   * Matched block counts for the endpoints in `alive` (modified) by walking the blocks in
   * order, ANDing the masks and recording the block at which each endpoint drops out.
   */
  private walk(h: BlockHashes, alive: Int32Array, W: number): void {
    const out = this.matched;
    const count = h.count;
    const t = this.table;
    const S = this.stride;
    let i = 0;
    for (; i < count && anyBit(alive, W); i++) {
      const slot = this.find(h.lo[i]!, h.hi[i]!);
      const base = slot * S + 3;
      for (let w = 0; w < W; w++) {
        const now = slot === EMPTY ? 0 : alive[w]! & t[base + w]!;
        recordBits(out, w, alive[w]! & ~now, i);
        alive[w] = now;
      }
    }
    for (let w = 0; w < W; w++) recordBits(out, w, alive[w]!, i);
  }

  private find(lo: number, hi: number): number {
    const mask = this.slotMask;
    const t = this.table;
    const S = this.stride;
    let i = lo & mask;
    for (;;) {
      const b = i * S;
      if (t[b + 2] === EMPTY) return EMPTY;
      if (t[b] === lo && t[b + 1] === hi) return i;
      i = (i + 1) & mask;
    }
  }

  /** Slot of the key, claiming a free one if absent (the caller must attach an entry). */
  private findOrCreate(lo: number, hi: number): number {
    if ((this.used + 1) * 2 > this.slotMask + 1) this.growTable();
    const mask = this.slotMask;
    const t = this.table;
    const S = this.stride;
    let i = lo & mask;
    for (;;) {
      const b = i * S;
      if (t[b + 2] === EMPTY) {
        t[b] = lo;
        t[b + 1] = hi;
        this.used++;
        return i;
      }
      if (t[b] === lo && t[b + 1] === hi) return i;
      i = (i + 1) & mask;
    }
  }

  private growTable(): void {
    const oldSlots = this.slotMask + 1;
    const slots = oldSlots * 2;
    const S = this.stride;
    const old = this.table;
    const t = newTable(slots, S);
    const mask = slots - 1;
    for (let s = 0; s < oldSlots; s++) {
      const first = old[s * S + 2]!;
      if (first === EMPTY) continue;
      let i = old[s * S]! & mask;
      while (t[i * S + 2] !== EMPTY) i = (i + 1) & mask;
      for (let k = 0; k < S; k++) t[i * S + k] = old[s * S + k]!;
      for (let ent = first; ent !== EMPTY; ent = this.ents[ent * ENTRY_STRIDE + E_CHAIN]!) this.ents[ent * ENTRY_STRIDE + E_SLOT] = i;
    }
    this.table = t;
    this.slotMask = mask;
  }

  /** Frees slot i, shifting later entries of its probe run back (no tombstones). */
  private deleteSlot(i: number): void {
    const mask = this.slotMask;
    const t = this.table;
    const S = this.stride;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const first = t[j * S + 2]!;
      if (first === EMPTY) break;
      const home = t[j * S]! & mask;
      // The entry at j may move to i only if its home is not cyclically within (i, j].
      const stays = i <= j ? i < home && home <= j : i < home || home <= j;
      if (stays) continue;
      for (let k = 0; k < S; k++) t[i * S + k] = t[j * S + k]!;
      for (let ent = first; ent !== EMPTY; ent = this.ents[ent * ENTRY_STRIDE + E_CHAIN]!) this.ents[ent * ENTRY_STRIDE + E_SLOT] = i;
      i = j;
    }
    t[i * S + 2] = EMPTY;
    for (let w = 0; w < this.maskWords; w++) t[i * S + 3 + w] = 0;
    this.used--;
  }

  private entryOf(slot: number, e: number): number {
    for (let ent = this.table[slot * this.stride + 2]!; ent !== EMPTY; ent = this.ents[ent * ENTRY_STRIDE + E_CHAIN]!) {
      if (this.ents[ent * ENTRY_STRIDE + E_EP] === e) return ent;
    }
    throw new RouterError('INTERNAL', `prefix index: mask says endpoint ${e} holds slot ${slot} but no entry`);
  }

  private allocEntry(): number {
    if (this.freeHead !== EMPTY) {
      const ent = this.freeHead;
      this.freeHead = this.ents[ent * ENTRY_STRIDE + E_NEXT]!;
      return ent;
    }
    if (this.entTop * ENTRY_STRIDE === this.ents.length) this.ents = grow(this.ents, this.ents.length * 2);
    return this.entTop++;
  }

  private pushMru(e: number, ent: number): void {
    const first = this.mru[e]!;
    this.ents[ent * ENTRY_STRIDE + E_GEN] = this.gen[e]!;
    this.ents[ent * ENTRY_STRIDE + E_PREV] = EMPTY;
    this.ents[ent * ENTRY_STRIDE + E_NEXT] = first;
    if (first !== EMPTY) this.ents[first * ENTRY_STRIDE + E_PREV] = ent;
    else this.lru[e] = ent;
    this.mru[e] = ent;
  }

  private unlinkLru(e: number, ent: number): void {
    const p = this.ents[ent * ENTRY_STRIDE + E_PREV]!;
    const nx = this.ents[ent * ENTRY_STRIDE + E_NEXT]!;
    if (p !== EMPTY) this.ents[p * ENTRY_STRIDE + E_NEXT] = nx;
    else this.mru[e] = nx;
    if (nx !== EMPTY) this.ents[nx * ENTRY_STRIDE + E_PREV] = p;
    else this.lru[e] = p;
  }

  private touch(e: number, ent: number): void {
    if (this.mru[e] === ent) {
      this.ents[ent * ENTRY_STRIDE + E_GEN] = this.gen[e]!;
      return;
    }
    this.unlinkLru(e, ent);
    this.pushMru(e, ent);
  }

  private removeEntry(ent: number): void {
    const e = this.ents[ent * ENTRY_STRIDE + E_EP]!;
    const slot = this.ents[ent * ENTRY_STRIDE + E_SLOT]!;
    this.unlinkLru(e, ent);
    const t = this.table;
    const b = slot * this.stride;
    const next = this.ents[ent * ENTRY_STRIDE + E_CHAIN]!;
    if (t[b + 2] === ent) {
      t[b + 2] = next;
    } else {
      let q = t[b + 2]!;
      while (this.ents[q * ENTRY_STRIDE + E_CHAIN] !== ent) q = this.ents[q * ENTRY_STRIDE + E_CHAIN]!;
      this.ents[q * ENTRY_STRIDE + E_CHAIN] = next;
    }
    const mi = b + 3 + (e >>> 5);
    t[mi] = t[mi]! & ~(1 << (e & 31));
    this.count[e] = this.count[e]! - 1;
    this.entries--;
    this.ents[ent * ENTRY_STRIDE + E_NEXT] = this.freeHead;
    this.freeHead = ent;
    if (t[b + 2] === EMPTY) this.deleteSlot(slot);
  }
}

function checkCount(what: string, v: number, max: number): void {
  if (!Number.isInteger(v) || v < 0 || v > max) {
    throw new RouterError('BAD_CONFIG', `prefix index: ${what} must be an integer in 0..${max}, got ${v}`);
  }
}

/** A table of `slots` free slots (chain head EMPTY, keys and masks 0). */
function newTable(slots: number, stride: number): Int32Array {
  const t = new Int32Array(slots * stride);
  for (let s = 0; s < slots; s++) t[s * stride + 2] = EMPTY;
  return t;
}

function nextPow2(v: number): number {
  let p = 1;
  while (p < v) p *= 2;
  return p;
}

function grow(a: Int32Array, size: number): Int32Array {
  const b = new Int32Array(size);
  b.set(a);
  return b;
}

function growFill(a: Int32Array, size: number, fill: number): Int32Array {
  const b = new Int32Array(size).fill(fill);
  b.set(a);
  return b;
}

function anyBit(mask: Int32Array, W: number): boolean {
  for (let w = 0; w < W; w++) if (mask[w] !== 0) return true;
  return false;
}

/** out[e] = value for every endpoint e whose bit is set in `bits` (mask word w). */
function recordBits(out: Uint32Array, w: number, bits: number, value: number): void {
  while (bits !== 0) {
    const low = bits & -bits;
    out[w * 32 + 31 - Math.clz32(low)] = value;
    bits ^= low;
  }
}
