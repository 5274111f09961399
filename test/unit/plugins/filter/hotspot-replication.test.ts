import { expect } from 'chai';
import { HotspotReplicationFilter } from '../../../../src/plugins/filter/hotspot-replication.js';
import type { HotspotOptions } from '../../../../src/plugins/filter/hotspot-replication.js';
import { prefixKeyOf } from '../../../../src/prefix-cache/prefix-key.js';
import type { CycleState } from '../../../../src/framework/types.js';
import { seededRng } from '../../../../src/util/rng.js';
import type { Rng } from '../../../../src/util/rng.js';
import { loadedCandidates, decision, leastLoaded, chatRequest, state } from '../../builders.js';

const OPTS: HotspotOptions = {
  keyChars: 256,
  minKeyChars: 64,
  unit: 'requests',
  highWater: 4,
  lowWater: 2,
  growIntervalMs: 0,
  minDwellMs: 1000,
  maxReplicas: 0,
  idleTtlMs: 60_000,
  maxPrefixes: 100,
  maxMetricsAgeMs: 1000,
  tokensPerRequest: 1000,
};

const HOT = 'hot system prompt '.repeat(20);

/** Routes one request through the filter and a least-loaded picker (random among ties), like a profile would. */
function route(
  f: HotspotReplicationFilter,
  loads: number[],
  nowMs: number,
  rng: Rng,
  prefix = HOT,
): { chosen: number; st: CycleState; allowed: number[] } {
  const st = state(chatRequest({ prefix }), nowMs, rng);
  const cs = loadedCandidates(loads);
  const left = f.filter(st, cs);
  const pick = leastLoaded(left, rng);
  f.onRouted(st, decision(st.request, pick.endpoint));
  return { chosen: pick.endpoint.index, st, allowed: left.map((c) => c.endpoint.index) };
}

describe('load/hotspot-replication filter', () => {
  it('leaves one-engine groups unrestricted, the home following the pipeline pick', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(1);
    const first = route(f, [1, 0, 1, 1], 0, rng);
    expect(first.allowed).to.deep.equal([0, 1, 2, 3]);
    expect(first.chosen).to.equal(1);
    const key = prefixKeyOf(HOT, 256)!;
    expect(f.setOf(key)?.members).to.deep.equal(['10.0.0.2:8000']);
    const again = route(f, [0, 2, 1, 1], 1, rng);
    expect(again.allowed).to.deep.equal([0, 1, 2, 3], 'home at 2 <= highWater: no restriction');
    expect(f.setOf(key)?.members).to.deep.equal(['10.0.0.1:8000'], 'home moved with the pick');
    expect(f.stats().replicated).to.equal(0);
  });

  it('grows by one engine (the least loaded) when every member is above highWater, then keeps the hot group on its set', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(2);
    route(f, [0, 9, 9, 9], 0, rng); // home 0
    expect(route(f, [4, 5, 5, 5], 5, rng).allowed).to.deep.equal([0, 1, 2, 3], 'at highWater, not above');
    const g = route(f, [5, 3, 1, 2], 10, rng);
    expect(g.allowed).to.deep.equal([2]);
    expect(g.st.reasonHint).to.equal('spill');
    expect(g.st.notes.join()).to.match(/grew to 2/);
    // Hot now: restricted to {0,2} although 3 is idler; next growth needs 2 above highWater too.
    expect(route(f, [6, 3, 4, 0], 20, rng).allowed).to.deep.equal([0, 2]);
    expect(route(f, [6, 3, 5, 0], 30, rng).allowed).to.deep.equal([3]);
    expect(f.stats()).to.include({ grows: 2, replicated: 1, largestSet: 3 });
  });

  it('does not grow when no outsider is less loaded than the members, nor beyond maxReplicas', () => {
    const f = new HotspotReplicationFilter('hotspot', { ...OPTS, maxReplicas: 2 });
    const rng = seededRng(3);
    route(f, [0, 1, 1], 0, rng);
    expect(route(f, [6, 6, 7], 1, rng).allowed).to.deep.equal([0, 1, 2]);
    expect(route(f, [6, 0, 7], 2, rng).allowed).to.deep.equal([1]);
    expect(route(f, [6, 6, 0], 3, rng).allowed).to.deep.equal([0, 1], 'capped at 2 replicas');
  });

  it('shrinks with hysteresis and a minimum dwell, dropping the newest member first', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(4);
    route(f, [0, 5, 5], 0, rng); // home 0
    route(f, [5, 0, 5], 100, rng); // grow → {0,1} at t=100
    // Cool: total 3 > lowWater × 1 = 2 → keep both.
    expect(route(f, [2, 1, 0], 2000, rng).allowed).to.deep.equal([0, 1]);
    // Total 2 <= 2 and 1900 ms >= minDwellMs since the growth: back to one engine, unrestricted.
    const s = route(f, [1, 1, 0], 2000, rng);
    expect(s.allowed).to.deep.equal([0, 1, 2]);
    expect(f.stats()).to.include({ shrinks: 1, replicated: 0 });
    // A set that just grew does not shrink before minDwellMs even if load vanishes.
    const home = f.setOf(prefixKeyOf(HOT, 256)!)!.members[0]!;
    const loads = [0, 0, 0];
    loads[Number(home.split('.')[3]!.split(':')[0]) - 1] = 5;
    route(f, loads, 2100, rng); // grow again at 2100
    expect(route(f, [0, 0, 0], 2500, rng).allowed).to.have.length(2);
    expect(route(f, [0, 0, 0], 3100, rng).allowed).to.have.length(3);
  });

  it('spreads a cold burst of siblings one engine at a time instead of piling it onto one engine', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(5);
    const loads = new Array<number>(8).fill(0);
    // A pipeline that would always pick the group's home (pure affinity): only the filter spreads.
    for (let i = 0; i < 40; i++) {
      const st = state(chatRequest({ prefix: HOT }), i, rng);
      const left = f.filter(st, loadedCandidates(loads));
      const key = prefixKeyOf(HOT, 256)!;
      const home = f.setOf(key)?.members ?? [];
      const pick =
        left.find((c) => home.includes(c.endpoint.id) && left.length < 8) ??
        left.reduce((a, b) => (b.load.inflightRequests < a.load.inflightRequests ? b : a));
      f.onRouted(st, decision(st.request, pick.endpoint));
      loads[pick.endpoint.index]!++;
    }
    expect(Math.max(...loads)).to.be.at.most(OPTS.highWater + 2);
    expect(loads.filter((l) => l > 0).length).to.be.at.least(6);
  });

  it('leaves short prefixes alone, forgets idle groups and bounds the number of groups', () => {
    const f = new HotspotReplicationFilter('hotspot', { ...OPTS, maxPrefixes: 3, idleTtlMs: 1000 });
    const rng = seededRng(6);
    expect(route(f, [0, 0], 0, rng, 'short').allowed).to.deep.equal([0, 1]);
    expect(f.stats().trackedPrefixes).to.equal(0);
    for (let g = 0; g < 5; g++) route(f, [0, 0], 0, rng, `group ${g} `.padEnd(100, 'y'));
    expect(f.stats().trackedPrefixes).to.equal(3);
    route(f, [0, 1], 0, rng); // HOT → home 0
    route(f, [5, 0], 500, rng); // grows → {0,1}
    expect(route(f, [5, 3], 600, rng).allowed).to.deep.equal([0, 1]);
    expect(f.stats().replicated).to.equal(1);
    route(f, [5, 3], 2000, rng); // idle beyond TTL: starts over as a new one-engine group
    expect(f.stats().replicated).to.equal(0);
  });

  it('starts a group over when none of its members is a candidate any more', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(7);
    route(f, [0, 1, 1], 0, rng); // {0}
    f.retain(['10.0.0.2:8000', '10.0.0.3:8000']);
    expect(f.stats().trackedPrefixes).to.equal(0);
  });

  it('rejects lowWater >= highWater', () => {
    expect(() => new HotspotReplicationFilter('h', { ...OPTS, lowWater: 4 })).to.throw(RangeError);
  });
});
