/**
 * Exponential decay 2^(−(now − at)/H) split at a reference time `ref`:
 * 2^((at − ref)/H) × 2^((ref − now)/H). A value stamped once (per scrape, per update) keeps
 * its first factor; a read over many values at one time computes the second once, so a sweep
 * over a fleet multiplies instead of calling Math.pow per value. Why the reference moves: the
 * factors grow without bound with the time since `ref`, so before a read is REF_SPAN
 * half-lives away the reference jumps to the read time, and every kept first factor is stale
 * (callers compare the `ref` they computed it with against the current one).
 */

/** Move the reference time before it is this many half-lives from a read. */
const REF_SPAN = 60;

export class HalfLifeFrame {
  /** The reference time of the kept factors; NaN until the first read. */
  private refMs = Number.NaN;
  private lastNow = Number.NaN;
  private toNow = 1;

  constructor(private readonly halfLifeMs: number) {}

  /** The current reference time (a kept `fromRef` factor is valid while this is unchanged). */
  get ref(): number {
    return this.refMs;
  }

  /** 2^((ref − now)/H) for a read at `nowMs`, moving the reference first when it is too far. */
  nowFactor(nowMs: number): number {
    if (nowMs !== this.lastNow) {
      if (!(Math.abs(nowMs - this.refMs) <= REF_SPAN * this.halfLifeMs)) this.refMs = nowMs;
      this.lastNow = nowMs;
      this.toNow = 2 ** ((this.refMs - nowMs) / this.halfLifeMs);
    }
    return this.toNow;
  }

  /** 2^((atMs − ref)/H) for the current reference. */
  fromRef(atMs: number): number {
    return 2 ** ((atMs - this.refMs) / this.halfLifeMs);
  }
}
