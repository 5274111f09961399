/** DecayedCounts: halving per half-life, accumulation, forgetting keys. */
import { expect } from 'chai';
import { DecayedCounts } from '../../../../src/plugins/shared/decayed-counts.js';
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
});
