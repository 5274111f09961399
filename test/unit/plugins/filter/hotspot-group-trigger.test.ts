/**
 * The hotspot filter's group-level trigger (minGroupShare, minLoadRatio): a prefix group
 * grows onto more engines only when the group itself is hot, not whenever its engines are
 * busy. These drive the filter with a small affinity pipeline (the group's last engine if
 * allowed, else the least loaded) and seeded arrivals, and compare with the original
 * engine-load trigger (both gates 0), which must grow in the same situations — otherwise
 * the assertions below could not fail.
 */
import { expect } from 'chai';
import { HotspotReplicationFilter } from '../../../../src/plugins/filter/hotspot-replication.js';
import type { HotspotOptions } from '../../../../src/plugins/filter/hotspot-replication.js';
import { prefixKeyOf } from '../../../../src/prefix-cache/prefix-key.js';
import type { Candidate } from '../../../../src/framework/types.js';
import { seededRng } from '../../../../src/util/rng.js';
import type { Rng } from '../../../../src/util/rng.js';
import { loadedCandidates, decision, leastLoaded, chatRequest, state } from '../../builders.js';

const LEGACY: HotspotOptions = {
  keyChars: 256,
  minKeyChars: 64,
  unit: 'requests',
  highWater: 6,
  lowWater: 2,
  growIntervalMs: 0,
  minDwellMs: 10_000,
  maxReplicas: 0,
  idleTtlMs: 120_000,
  maxPrefixes: 10_000,
  maxMetricsAgeMs: 1000,
  tokensPerRequest: 1024,
};
/** The shipped defaults of the gates (the hotspot plugin schema, src/plugins/filter/hotspot-replication.ts). */
const GATED: HotspotOptions = { ...LEGACY, minGroupShare: 0.5, minLoadRatio: 1.5, shareHalfLifeMs: 5000 };

function groupPrefix(g: number): string {
  return `group ${g} system prompt `.repeat(16);
}

class Pipeline {
  private readonly last = new Map<number, number>();
  constructor(
    readonly f: HotspotReplicationFilter,
    readonly rng: Rng,
  ) {}

  /** Routes one request of group g at nowMs with the given engine loads; returns the allowed and chosen engines. */
  route(g: number, loads: readonly number[], nowMs: number): { allowed: number[]; chosen: number } {
    const st = state(chatRequest({ prefix: groupPrefix(g) }), nowMs, this.rng);
    const left = this.f.filter(st, loadedCandidates(loads));
    const aff = this.last.get(g);
    const pick: Candidate = left.find((c) => c.endpoint.index === aff) ?? leastLoaded(left, this.rng);
    this.f.onRouted(st, decision(st.request, pick.endpoint));
    this.last.set(g, pick.endpoint.index);
    return { allowed: left.map((c) => c.endpoint.index), chosen: pick.endpoint.index };
  }

  /** Warms `groups` groups round-robin over `engines` engines at t=0 (every engine idle but the group's own). */
  warm(groups: number, engines: number): void {
    for (let g = 0; g < groups; g++) {
      const loads = new Array<number>(engines).fill(9);
      loads[g % engines] = 0;
      this.route(g, loads, 0);
    }
  }
}

/** 48 warm groups on 4 engines, uniform arrivals every 60 ms for 60 s, `loadsAt` gives the engines' loads. */
function evenTraffic(opts: HotspotOptions, loadsAt: (rng: Rng) => number[], seed = 11): HotspotReplicationFilter {
  const f = new HotspotReplicationFilter('hotspot', opts);
  const rng = seededRng(seed);
  const p = new Pipeline(f, rng);
  p.warm(48, 4);
  for (let t = 1; t <= 1000; t++) p.route(rng.int(48), loadsAt(rng), t * 60);
  return f;
}

describe('plugins/filter hotspot replication: group-level trigger', () => {
  it('evenly busy fleet with many warm groups: no group grows (the engine-load trigger grew them all)', () => {
    // Every engine between 7 and 10 in flight: all above high water 6, none clearly busier.
    const busy = (rng: Rng): number[] => [0, 1, 2, 3].map(() => 7 + rng.int(4));
    const legacy = evenTraffic(LEGACY, busy);
    expect(legacy.stats().grows, 'control: the engine-load trigger cascades').to.be.greaterThan(20);

    const gated = evenTraffic(GATED, busy);
    expect(gated.stats()).to.include({ grows: 0, replicated: 0, largestSet: 1 });
    // Each gate alone holds it too.
    const shareOnly = evenTraffic({ ...GATED, minLoadRatio: 0 }, busy);
    expect(shareOnly.stats().grows).to.equal(0);
    expect(shareOnly.stats().heldByShare).to.be.greaterThan(0);
    const ratioOnly = evenTraffic({ ...GATED, minGroupShare: 0 }, busy);
    expect(ratioOnly.stats().grows).to.equal(0);
    expect(ratioOnly.stats().heldByImbalance).to.be.greaterThan(0);
  });

  it('one engine overloaded by many groups (none hot): the share gate holds every group', () => {
    // Engine 0 is far busier than the rest, but it carries 12 groups evenly: no group is the cause.
    const skewed = (rng: Rng): number[] => [12 + rng.int(3), 1 + rng.int(2), 1 + rng.int(2), 1 + rng.int(2)];
    expect(evenTraffic(LEGACY, skewed).stats().grows, 'control').to.be.greaterThan(0);
    const f = evenTraffic({ ...GATED }, skewed);
    expect(f.stats().grows).to.equal(0);
    expect(f.stats().heldByShare).to.be.greaterThan(0);
  });

  it('one hot group overloading its engine while the others are idle: grows one engine at a time and keeps its set', () => {
    const f = new HotspotReplicationFilter('hotspot', GATED);
    const rng = seededRng(12);
    const p = new Pipeline(f, rng);
    p.warm(12, 4); // groups 0..11, group 0 homed on engine 0
    const key = prefixKeyOf(groupPrefix(0), 256)!;
    // 80% of arrivals are group 0; its engine fills up, the others stay nearly idle.
    let grewAt = -1;
    for (let t = 1; t <= 200 && grewAt < 0; t++) {
      const g = rng.next() < 0.8 ? 0 : 1 + rng.int(11);
      const home = f.setOf(key)!.members.length;
      const r = p.route(g, [Math.min(10, t), 1, 0, 1], t * 50);
      if (g === 0 && f.setOf(key)!.members.length > home) {
        grewAt = t;
        expect(r.allowed, 'the spill goes to the idlest engine alone').to.deep.equal([2]);
      }
    }
    expect(grewAt, 'grew once its engine passed high water').to.be.within(7, 20);
    expect(f.setOf(key)!.members).to.deep.equal(['10.0.0.1:8000', '10.0.0.3:8000']);
    // Hot now: its requests stay on the set although engine 1 is idle; both members busy → grows to engine 1.
    expect(p.route(0, [8, 0, 5, 1], 20_000).allowed).to.deep.equal([0, 2]);
    expect(p.route(0, [8, 0, 7, 1], 20_050).allowed).to.deep.equal([1]);
    expect(f.stats()).to.include({ grows: 2, largestSet: 3, heldByShare: 0 });
  });

  it('a hot group on an evenly busy fleet does not grow: its engines are no busier than the rest', () => {
    const f = new HotspotReplicationFilter('hotspot', GATED);
    const rng = seededRng(13);
    const p = new Pipeline(f, rng);
    p.warm(4, 4);
    for (let t = 1; t <= 200; t++) p.route(rng.next() < 0.8 ? 0 : 1 + rng.int(3), [8, 8, 7, 8], t * 50);
    expect(f.stats().grows).to.equal(0);
    expect(f.stats().heldByImbalance).to.be.greaterThan(0);
    // The same moment with idle outsiders grows.
    p.route(0, [8, 1, 1, 1], 10_100);
    expect(f.stats().grows).to.equal(1);
  });

  it('keeps hysteresis: a replicated group keeps its set while busy even when its share drops, and shrinks only at low water after the dwell', () => {
    const f = new HotspotReplicationFilter('hotspot', GATED);
    const rng = seededRng(14);
    const p = new Pipeline(f, rng);
    p.warm(24, 4);
    const key = prefixKeyOf(groupPrefix(0), 256)!;
    for (let t = 1; t <= 10; t++) p.route(0, [9, 1, 0, 1], t * 10); // hot: grows to {0, 2}
    expect(f.setOf(key)!.members).to.have.length(2);
    // Now 23 other groups bring the traffic on the busy members: the set neither grows nor shrinks.
    for (let t = 1; t <= 100; t++) p.route(1 + rng.int(23), [7, 1, 7, 1], 1000 + t * 10);
    expect(p.route(0, [7, 1, 7, 1], 2100).allowed).to.deep.equal([0, 2]);
    expect(f.stats()).to.include({ grows: 1, shrinks: 0 });
    // Load at low water but before minDwellMs (10 s after the growth): still two members.
    expect(p.route(0, [1, 0, 1, 0], 5000).allowed).to.deep.equal([0, 2]);
    // After the dwell: back to one engine, unrestricted.
    expect(p.route(0, [1, 0, 1, 0], 11_000).allowed).to.deep.equal([0, 1, 2, 3]);
    expect(f.stats().shrinks).to.equal(1);
  });

  it('drops groups whose engines were removed and rejects out-of-range gates', () => {
    const f = new HotspotReplicationFilter('hotspot', GATED);
    const p = new Pipeline(f, seededRng(15));
    p.warm(4, 4);
    f.retain(['10.0.0.1:8000']);
    expect(f.stats().trackedPrefixes).to.equal(1);
    expect(() => new HotspotReplicationFilter('h', { ...GATED, minGroupShare: 1.5 })).to.throw(RangeError);
    expect(() => new HotspotReplicationFilter('h', { ...GATED, minLoadRatio: -1 })).to.throw(RangeError);
    expect(() => new HotspotReplicationFilter('h', { ...GATED, shareHalfLifeMs: 0 })).to.throw(RangeError);
  });
});
