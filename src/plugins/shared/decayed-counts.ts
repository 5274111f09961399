/**
 * Event counts per key that halve every `halfLifeMs`: "how much happened here lately"
 * without windows or timers. Each key stores its value as of its last update and decays it
 * on read, so an update is O(1) and idle keys cost nothing. Used by the hotspot filter
 * (a group's share of its engines' arrivals) and the max-score picker (recent cold picks).
 */
interface Count {
  value: number;
  atMs: number;
}

export class DecayedCounts {
  private readonly counts = new Map<string, Count>();

  constructor(private readonly halfLifeMs: number) {
    if (!(halfLifeMs > 0)) throw new RangeError('decayed counts need a half-life > 0');
  }

  /** The key's count decayed to `nowMs` (0 for a key never counted). */
  valueAt(key: string, nowMs: number): number {
    const c = this.counts.get(key);
    if (c === undefined) return 0;
    const dt = nowMs - c.atMs;
    return dt <= 0 ? c.value : c.value * 2 ** (-dt / this.halfLifeMs);
  }

  /** Counts one event for the key at `nowMs`. */
  add(key: string, nowMs: number): void {
    const c = this.counts.get(key);
    if (c === undefined) {
      this.counts.set(key, { value: 1, atMs: nowMs });
      return;
    }
    c.value = this.valueAt(key, nowMs) + 1;
    c.atMs = Math.max(c.atMs, nowMs);
  }

  /** Forgets every key not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const key of this.counts.keys()) if (!keep.has(key)) this.counts.delete(key);
  }
}
