/**
 * Event counts per key that halve every `halfLifeMs`: "how much happened here lately"
 * without windows or timers. Each key stores its value as of its last update and decays it
 * on read, so an update is O(1) and idle keys cost nothing. Used by the hotspot filter
 * (a group's share of its engines' arrivals), cold-request placement and predicted-ttft
 * (recent placements per engine, read for every candidate of a decision).
 */
import { HalfLifeFrame } from '../../util/half-life-frame.js';

/** One key's count as a stable handle (`handleOf`): valid while `live` (retain clears it). */
export interface CountHandle {
  readonly key: string;
  readonly live: boolean;
}

interface Count extends CountHandle {
  live: boolean;
  value: number;
  atMs: number;
  /** value × 2^((atMs − ref)/H) for the reference `scaledRef` (see valueAt). */
  scaled: number;
  scaledRef: number;
}

export class DecayedCounts {
  private readonly counts = new Map<string, Count>();
  /** Reference time of the scaled values and the per-read factor. */
  private readonly frame: HalfLifeFrame;

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
    let c = this.counts.get(key);
    if (c === undefined) {
      c = { key, live: true, value: 0, atMs: Number.NEGATIVE_INFINITY, scaled: 0, scaledRef: Number.NaN };
      this.counts.set(key, c);
    }
    return c;
  }

  /** `valueAt` for the key of a live handle. */
  valueOf(handle: CountHandle, nowMs: number): number {
    const c = handle as Count;
    if (c.value === 0) return 0;
    const dt = nowMs - c.atMs;
    if (dt <= 0) return c.value;
    const toNow = this.frame.nowFactor(nowMs);
    const ref = this.frame.ref;
    if (c.scaledRef !== ref) {
      c.scaled = c.value * this.frame.fromRef(c.atMs);
      c.scaledRef = ref;
    }
    return c.scaled * toNow;
  }

  /** Counts one event for the key at `nowMs`. */
  add(key: string, nowMs: number): void {
    const c = this.counts.get(key);
    if (c === undefined) {
      this.counts.set(key, { key, live: true, value: 1, atMs: nowMs, scaled: 0, scaledRef: Number.NaN });
      return;
    }
    c.value = this.valueAt(key, nowMs) + 1;
    c.atMs = Math.max(c.atMs, nowMs);
    c.scaledRef = Number.NaN;
  }

  /** Forgets every key not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const [key, c] of this.counts) {
      if (keep.has(key)) continue;
      c.live = false;
      this.counts.delete(key);
    }
  }
}
