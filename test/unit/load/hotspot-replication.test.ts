import { expect } from 'chai';
import { HotspotReplicationFilter } from '../../../src/plugins/filter/hotspot-replication.js';
import type { HotspotOptions } from '../../../src/plugins/filter/hotspot-replication.js';
import { prefixKeyOf } from '../../../src/plugins/shared/prefix-key.js';
import type { Candidate, CycleState } from '../../../src/scheduling/types.js';
import { seededRng } from '../../../src/util/rng.js';
import type { Rng } from '../../../src/util/rng.js';
import { candidates, decision, request, state } from './builders.js';

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
  maxMetricsAgeMs: 1000, tokensPerRequest: 1000,
};

const HOT = 'hot system prompt '.repeat(20);

/** Routes one request through the filter and a least-loaded picker (random among ties), like a profile would. */
function route(f: HotspotReplicationFilter, loads: number[], nowMs: number, rng: Rng, prefix = HOT): { chosen: number; st: CycleState; allowed: number[] } {
  const st = state(request({ prefix }), nowMs, rng);
  const cs = candidates(loads);
  const left = f.filter(st, cs);
  let best = Infinity;
  let ties: Candidate[] = [];
  for (const c of left) {
    const l = c.load.inflightRequests;
    if (l < best) [best, ties] = [l, [c]];
    else if (l === best) ties.push(c);
  }
  const pick = ties[rng.int(ties.length)]!;
  f.onRouted(st, decision(st.request, pick.endpoint));
  return { chosen: pick.endpoint.index, st, allowed: left.map((c) => c.endpoint.index) };
}

describe('load/hotspot-replication filter', () => {
  it('lets a new prefix group go anywhere, then keeps it on the engine it landed on', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(1);
    const first = route(f, [1, 0, 1, 1], 0, rng);
    expect(first.allowed).to.deep.equal([0, 1, 2, 3]);
    expect(first.chosen).to.equal(1);
    const again = route(f, [0, 2, 0, 0], 1, rng);
    expect(again.allowed).to.deep.equal([1], 'restricted to the set although others are idler (below highWater)');
    expect(f.setOf(prefixKeyOf(HOT, 256)!)?.members).to.deep.equal(['10.0.0.2:8000']);
  });

  it('grows by one engine (the least loaded) when every member reaches highWater, marking the decision a spill', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(2);
    route(f, [0, 9, 9, 9], 0, rng); // set = {0}
    const g = route(f, [4, 3, 1, 2], 10, rng);
    expect(g.allowed).to.deep.equal([2]);
    expect(g.st.reasonHint).to.equal('spill');
    expect(g.st.notes.join()).to.match(/grew to 2/);
    // Next growth needs the newcomer at highWater too.
    expect(route(f, [5, 3, 3, 0], 20, rng).allowed).to.deep.equal([0, 2]);
    expect(route(f, [5, 3, 4, 0], 30, rng).allowed).to.deep.equal([3]);
    expect(f.stats()).to.include({ grows: 2, replicated: 1, largestSet: 3 });
  });

  it('does not grow when no outsider is less loaded than the members, nor beyond maxReplicas', () => {
    const f = new HotspotReplicationFilter('hotspot', { ...OPTS, maxReplicas: 2 });
    const rng = seededRng(3);
    route(f, [0, 1, 1], 0, rng);
    expect(route(f, [6, 6, 7], 1, rng).allowed).to.deep.equal([0]);
    expect(route(f, [6, 0, 7], 2, rng).allowed).to.deep.equal([1]);
    expect(route(f, [6, 6, 0], 3, rng).allowed).to.deep.equal([0, 1], 'capped at 2 replicas');
  });

  it('shrinks with hysteresis and a minimum dwell, dropping the newest member first', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(4);
    route(f, [0, 5, 5], 0, rng); // {0}
    route(f, [4, 0, 5], 100, rng); // grow → {0,1} at t=100
    // Cool: total 3 > lowWater × 1 = 2 → keep both.
    expect(route(f, [2, 1, 0], 2000, rng).allowed).to.deep.equal([0, 1]);
    // Total 2 ≤ 2 but within the dwell of the last change? No: dwell counts from t=100, so it shrinks now.
    const s = route(f, [1, 1, 0], 2000, rng);
    expect(s.allowed).to.deep.equal([0]);
    expect(f.stats().shrinks).to.equal(1);
    // A set that just grew does not shrink before minDwellMs even if load vanishes.
    route(f, [4, 0, 9], 2100, rng); // grow again → {0,1} at 2100
    expect(route(f, [0, 0, 0], 2500, rng).allowed).to.deep.equal([0, 1]);
    expect(route(f, [0, 0, 0], 3100, rng).allowed).to.deep.equal([0]);
  });

  it('spreads a cold burst of siblings one engine at a time instead of piling it onto one engine', () => {
    const f = new HotspotReplicationFilter('hotspot', OPTS);
    const rng = seededRng(5);
    const loads = new Array<number>(8).fill(0);
    for (let i = 0; i < 32; i++) loads[route(f, loads, i, rng).chosen]!++; // nothing finishes
    expect(Math.max(...loads)).to.be.at.most(OPTS.highWater + 1);
    expect(loads.filter((l) => l > 0).length).to.be.at.least(6);
  });

  it('leaves short prefixes alone, forgets idle groups and bounds the number of groups', () => {
    const f = new HotspotReplicationFilter('hotspot', { ...OPTS, maxPrefixes: 3, idleTtlMs: 1000 });
    const rng = seededRng(6);
    expect(route(f, [0, 0], 0, rng, 'short').allowed).to.deep.equal([0, 1]);
    expect(f.stats().trackedPrefixes).to.equal(0);
    for (let g = 0; g < 5; g++) route(f, [0, 0], 0, rng, `group ${g} `.padEnd(100, 'y'));
    expect(f.stats().trackedPrefixes).to.equal(3);
    route(f, [0, 1], 0, rng); // HOT → {0}
    expect(route(f, [3, 0], 500, rng).allowed).to.deep.equal([0]);
    expect(route(f, [3, 0], 2000, rng).allowed).to.deep.equal([0, 1], 'idle beyond TTL: starts over');
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
