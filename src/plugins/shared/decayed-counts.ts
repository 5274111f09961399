/**
 * Event counts per key that halve every `halfLifeMs`: "how much happened here lately"
 * without windows or timers. Each key stores its value as of its last update and decays it
 * on read, so an update is O(1) and idle keys cost nothing. Used by the hotspot filter
 * (a group's share of its engines' arrivals), cold-request placement and predicted-ttft
 * (recent placements per engine, read for every candidate of a decision).
 *
 * The numbers of every key live in four Float64Arrays indexed by the key's slot, not in an
 * object per key. Why: a cold placement reads every endpoint's count on a decision, and each
 * number field of an object is a separately allocated box, so a read was five scattered
 * memory accesses per endpoint (most of a cold decision at 1,024 endpoints); now it is the
 * handle and four adjacent array reads.
 */
import { HalfLifeFrame } from '../../util/half-life-frame.js';

/** One key's count as a stable handle (`handleOf`): valid while `live` (retain clears it). */
export interface CountHandle {
  readonly key: string;
  readonly live: boolean;
}

interface Count extends CountHandle {
  live: boolean;
  /** The key's position in the number arrays (reused by another key once it is not live). */
  readonly slot: number;
}

const INITIAL_SLOTS = 8;

export class DecayedCounts {
  private readonly counts = new Map<string, Count>();
  /** Reference time of the scaled values and the per-read factor. */
  private readonly frame: HalfLifeFrame;
  /** Per slot: the count as of `atMs`. */
  private value: Float64Array = new Float64Array(INITIAL_SLOTS);
  private atMs: Float64Array = new Float64Array(INITIAL_SLOTS);
  /** value × 2^((atMs − ref)/H) for the reference `scaledRef` (see valueAt). */
  private scaled: Float64Array = new Float64Array(INITIAL_SLOTS);
  private scaledRef: Float64Array = new Float64Array(INITIAL_SLOTS);
  /** Slots in use or freed so far; freed ones wait in `free`. */
  private slots = 0;
  private readonly free: number[] = [];
  private forgotten = 0;

  constructor(halfLifeMs: number) {
    if (!(halfLifeMs > 0)) throw new RangeError('decayed counts need a half-life > 0');
    this.frame = new HalfLifeFrame(halfLifeMs);
  }

  /**
   * The key's count decayed to `nowMs` (0 for a key never counted). Why the factors: a
   * placement reads every endpoint's count at one time, and value × 2^(−dt/H) as (value ×
   * 2^((atMs − ref)/H), kept per update) × 2^((ref − now)/H), kept per read time, is one
   * Math.pow per read time instead of one per key (agrees with the direct form to 1e-15).
   */
  valueAt(key: string, nowMs: number): number {
    const c = this.counts.get(key);
    return c === undefined ? 0 : this.valueOf(c, nowMs);
  }

  /**
   * The key's handle for `valueOf`, its count created at 0 when missing (reads and counts as
   * if it were missing). Why: a placement reads every endpoint's count on a decision; a
   * handle kept per endpoint index saves the lookup by id.
   */
  handleOf(key: string): CountHandle {
    return this.counts.get(key) ?? this.create(key, 0, Number.NEGATIVE_INFINITY);
  }

  /** `valueAt` for the key of a live handle. */
  valueOf(handle: CountHandle, nowMs: number): number {
    return this.valueAtSlot((handle as Count).slot, nowMs);
  }

  /**
   * The slot of a live handle's key: `valueAtSlot` reads it while `epoch` is unchanged (a
   * caller that keeps slots per endpoint index then touches no object per read).
   */
  slotOf(handle: CountHandle): number {
    return (handle as Count).slot;
  }

  /** Moves whenever `retain` forgets a key (its slot may then hold another key). */
  get epoch(): number {
    return this.forgotten;
  }

  /**
   * `valueAtSlot` of `slots[k]` into `out[k]` for k < n: one call for a fleet's reads (a call
   * per read returned each value boxed, a heap number per endpoint).
   */
  valuesAtSlots(slots: Int32Array, n: number, nowMs: number, out: Float64Array): void {
    for (let k = 0; k < n; k++) out[k] = this.valueAtSlot(slots[k]!, nowMs);
  }

  /** `valueAt` for the key holding `slot` (see slotOf). */
  valueAtSlot(i: number, nowMs: number): number {
    const value = this.value[i]!;
    if (value === 0) return 0;
    const at = this.atMs[i]!;
    const dt = nowMs - at;
    if (dt <= 0) return value;
    const toNow = this.frame.nowFactor(nowMs);
    const ref = this.frame.ref;
    if (this.scaledRef[i] !== ref) {
      this.scaled[i] = value * this.frame.fromRef(at);
      this.scaledRef[i] = ref;
    }
    return this.scaled[i]! * toNow;
  }

  /** Counts one event for the key at `nowMs`. */
  add(key: string, nowMs: number): void {
    const c = this.counts.get(key);
    if (c === undefined) {
      this.create(key, 1, nowMs);
      return;
    }
    const i = c.slot;
    this.value[i] = this.valueOf(c, nowMs) + 1;
    this.atMs[i] = Math.max(this.atMs[i]!, nowMs);
    this.scaledRef[i] = Number.NaN;
  }

  /** Forgets every key not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const [key, c] of this.counts) {
      if (keep.has(key)) continue;
      c.live = false;
      this.counts.delete(key);
      this.free.push(c.slot);
      this.forgotten++;
    }
  }

  /** A live count for `key` (absent) holding `value` as of `atMs`. */
  private create(key: string, value: number, atMs: number): Count {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.slots++;
      if (slot === this.value.length) this.grow();
    }
    this.value[slot] = value;
    this.atMs[slot] = atMs;
    this.scaled[slot] = 0;
    this.scaledRef[slot] = Number.NaN;
    const c: Count = { key, live: true, slot };
    this.counts.set(key, c);
    return c;
  }

  private grow(): void {
    const n = this.value.length * 2;
    const grown = (a: Float64Array): Float64Array => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.value = grown(this.value);
    this.atMs = grown(this.atMs);
    this.scaled = grown(this.scaled);
    this.scaledRef = grown(this.scaledRef);
  }
}
