/** DecayedCounts: halving per half-life, accumulation, forgetting keys. */
import { expect } from 'chai';
import { type CountHandle, DecayedCounts } from '../../../../src/plugins/shared/decayed-counts.js';
import { HalfLifeFrame } from '../../../../src/util/half-life-frame.js';
import { seededRng } from '../../../../src/util/rng.js';

describe('plugins/shared: decayed counts', () => {
  it('halves a count every half-life and adds new events on top of the decayed value', () => {
    const c = new DecayedCounts(1000);
    expect(c.valueAt('a', 0)).to.equal(0);
    c.add('a', 0);
    c.add('a', 0);
    expect(c.valueAt('a', 0)).to.equal(2);
    expect(c.valueAt('a', 1000)).to.be.closeTo(1, 1e-12);
    expect(c.valueAt('a', 3000)).to.be.closeTo(0.25, 1e-12);
    c.add('a', 1000);
    expect(c.valueAt('a', 1000)).to.be.closeTo(2, 1e-12);
    expect(c.valueAt('a', 500), 'a read before the last update is not grown back').to.be.closeTo(2, 1e-12);
  });

  it('forgets keys outside the kept set, and refuses a non-positive half-life', () => {
    const c = new DecayedCounts(1000);
    c.add('a', 0);
    c.add('b', 0);
    c.retain(new Set(['b']));
    expect(c.valueAt('a', 0)).to.equal(0);
    expect(c.valueAt('b', 0)).to.equal(1);
    expect(() => new DecayedCounts(0)).to.throw(RangeError);
  });

  it('agrees with value × 2^(−dt/H) to 1e-12 over many half-lives of reads and updates (the reference moves)', () => {
    const H = 100;
    const c = new DecayedCounts(H);
    const model = new Map<string, { value: number; atMs: number }>();
    const direct = (k: string, now: number): number => {
      const m = model.get(k);
      if (m === undefined) return 0;
      const dt = now - m.atMs;
      return dt <= 0 ? m.value : m.value * 2 ** (-dt / H);
    };
    const rng = seededRng(6);
    let now = 0;
    for (let step = 0; step < 20_000; step++) {
      now += rng.int(40);
      const k = `k${rng.int(5)}`;
      if (rng.next() < 0.3) {
        const v = direct(k, now) + 1;
        const m = model.get(k);
        model.set(k, { value: v, atMs: Math.max(m?.atMs ?? now, now) });
        c.add(k, now);
      }
      const at = now - rng.int(30);
      for (const key of ['k0', 'k1', 'k2', 'k3', 'k4']) {
        const want = direct(key, at);
        expect(c.valueAt(key, at)).to.be.closeTo(want, 1e-12 * Math.max(1, want));
      }
    }
  });

  it('handles read what valueAt reads, a created handle counts as missing, and retain kills handles', () => {
    const c = new DecayedCounts(1000);
    const h = c.handleOf('a');
    expect(c.valueOf(h, 5)).to.equal(0);
    c.add('a', 10);
    expect(c.valueOf(h, 10)).to.equal(1);
    expect(c.valueOf(h, 1010)).to.be.closeTo(0.5, 1e-12);
    expect(c.valueOf(h, 1010)).to.equal(c.valueAt('a', 1010));
    const fresh = new DecayedCounts(1000);
    fresh.add('a', 10);
    expect(c.valueAt('a', 3000)).to.be.closeTo(fresh.valueAt('a', 3000), 1e-15);
    c.retain(new Set(['b']));
    expect(h.live).to.equal(false);
    expect(c.valueAt('a', 1010)).to.equal(0);
  });

  it('reads to the bit what the object-per-key version read, over seeded adds, reads, handles and retains', () => {
    // The object-per-key version this class replaced (its numbers moved to arrays by slot).
    class Reference {
      private readonly counts = new Map<string, { value: number; atMs: number; scaled: number; scaledRef: number }>();
      private readonly frame: HalfLifeFrame;
      constructor(h: number) {
        this.frame = new HalfLifeFrame(h);
      }
      valueAt(key: string, nowMs: number): number {
        const c = this.counts.get(key);
        if (c === undefined || c.value === 0) return 0;
        const dt = nowMs - c.atMs;
        if (dt <= 0) return c.value;
        const toNow = this.frame.nowFactor(nowMs);
        if (c.scaledRef !== this.frame.ref) {
          c.scaled = c.value * this.frame.fromRef(c.atMs);
          c.scaledRef = this.frame.ref;
        }
        return c.scaled * toNow;
      }
      add(key: string, nowMs: number): void {
        const c = this.counts.get(key);
        if (c === undefined) {
          this.counts.set(key, { value: 1, atMs: nowMs, scaled: 0, scaledRef: Number.NaN });
          return;
        }
        c.value = this.valueAt(key, nowMs) + 1;
        c.atMs = Math.max(c.atMs, nowMs);
        c.scaledRef = Number.NaN;
      }
      retain(keep: ReadonlySet<string>): void {
        for (const key of [...this.counts.keys()]) if (!keep.has(key)) this.counts.delete(key);
      }
    }
    const H = 250;
    const c = new DecayedCounts(H);
    const ref = new Reference(H);
    const keys = Array.from({ length: 40 }, (_, i) => `e${i}`);
    const handles = new Map<string, CountHandle>();
    const slotsAt = { epoch: -1, slots: new Map<string, number>() };
    const rng = seededRng(17);
    let now = 0;
    for (let step = 0; step < 30_000; step++) {
      now += rng.int(25);
      const k = keys[rng.int(keys.length)]!;
      const op = rng.int(10);
      if (op < 3) {
        c.add(k, now);
        ref.add(k, now);
      } else if (op === 3 && rng.next() < 0.05) {
        const keep = new Set(keys.filter(() => rng.next() < 0.7));
        c.retain(keep);
        ref.retain(keep);
      } else if (op < 7) {
        let h = handles.get(k);
        if (h === undefined || !h.live) handles.set(k, (h = c.handleOf(k)));
        expect(c.valueOf(h, now), `step ${step} handle ${k}`).to.equal(ref.valueAt(k, now));
        // A slot kept while the epoch holds reads the same.
        const slots = slotsAt.epoch === c.epoch ? slotsAt.slots : new Map<string, number>();
        slotsAt.epoch = c.epoch;
        slotsAt.slots = slots;
        if (!slots.has(k)) slots.set(k, c.slotOf(h));
        expect(c.valueAtSlot(slots.get(k)!, now), `step ${step} slot ${k}`).to.equal(ref.valueAt(k, now));
      } else expect(c.valueAt(k, now), `step ${step} ${k}`).to.equal(ref.valueAt(k, now));
    }
  });
});
