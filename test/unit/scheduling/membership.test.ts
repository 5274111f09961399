/**
 * Membership at run time through createScheduler: engines join and leave the registry while
 * the scheduler runs; picks, the prefix index, the hash ring, sessions and hotspot groups
 * follow without a restart.
 */
import { expect } from 'chai';
import type { StrategyName } from '../../../src/config/types.js';
import type { EndpointSpec } from '../../../src/endpoints/registry.js';
import { SessionAffinityScorer } from '../../../src/plugins/scorer/session-affinity.js';
import { PREFIX_INDEX } from '../../../src/plugins/multi/prefix-cache-plugin.js';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import type { Scheduler } from '../../../src/scheduling/scheduler.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { config, request, text } from '../builders.js';

type Over = Parameters<typeof config>[1];

function spec(i: number): EndpointSpec {
  return { id: `127.0.0.1:${9001 + i}`, address: '127.0.0.1', port: 9001 + i, pool: 'default', models: [] };
}

function sched(n: number, strategy: StrategyName, over: Over = {}): Scheduler {
  return createScheduler(config(n, { strategy, ...over }), { clock: new ManualClock(), rng: seededRng(5) });
}

function pickCounts(s: Scheduler, n: number, prefix: (k: number) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (let k = 0; k < n; k++) {
    const t = s.route(request({ prefix: prefix(k) }));
    out.set(t.decision.endpoint.id, (out.get(t.decision.endpoint.id) ?? 0) + 1);
    t.finish({ aborted: false, status: 200 });
  }
  return out;
}

const STRATEGIES: StrategyName[] = [
  'round-robin',
  'random',
  'least-request',
  'prefix-hash',
  'cache-aware',
  'bounded-load-hash',
  'power-of-two',
  'auto',
];

describe('scheduler membership', () => {
  for (const strategy of STRATEGIES) {
    it(`${strategy}: joiners get picks, leavers get none, without a restart`, () => {
      const s = sched(2, strategy);
      s.registry.replace([spec(0), spec(1), spec(2), spec(3)]);
      const after = pickCounts(s, 400, (k) => text(k, 200));
      expect([...after.keys()].sort(), 'all four picked').to.deep.equal([spec(0).id, spec(1).id, spec(2).id, spec(3).id]);
      s.registry.remove(spec(1).id);
      const later = pickCounts(s, 400, (k) => text(1000 + k, 200));
      expect(later.has(spec(1).id), 'removed engine picked').to.equal(false);
      expect(later.size).to.equal(3);
    });
  }

  it("cache-aware: a leaver's index entries go, and a newcomer on its index starts empty", () => {
    const s = sched(2, 'cache-aware');
    const index = s.service(PREFIX_INDEX)!;
    const prompt = text(7, 2000);
    const first = s.route(request({ prefix: prompt }));
    first.finish({ aborted: false, status: 200 });
    const holder = first.decision.endpoint;
    expect(index.size(holder.index)).to.be.greaterThan(0);
    // Affinity before the change: the same prompt goes back to the holder.
    expect(s.route(request({ prefix: prompt })).decision.endpoint.id).to.equal(holder.id);
    s.registry.remove(holder.id);
    expect(index.size(holder.index)).to.equal(0);
    // Leases of the earlier requests are released above; the second ticket still holds one.
    const newcomer = s.registry.add(spec(5)).added[0]!;
    expect(newcomer.index).to.not.equal(holder.index); // its slot still has a request in flight
    const t = s.route(request({ prefix: prompt }));
    expect(t.decision.matchedBlocks).to.equal(0);
  });

  it('an in-flight request to a leaver finishes: accounting released, no state recreated', () => {
    const s = sched(2, 'cache-aware');
    const index = s.service(PREFIX_INDEX)!;
    const t = s.route(request({ prefix: text(3, 1500) }));
    const gone = t.decision.endpoint;
    s.registry.remove(gone.id);
    expect(s.registry.inflight.requests(gone.index)).to.equal(1);
    expect(s.registry.draining().map((e) => e.id)).to.deep.equal([gone.id]);
    t.firstByte?.();
    t.finish({ aborted: false, status: 200, promptTokens: 375, cachedTokens: 0 });
    expect(s.registry.inflight.requests(gone.index)).to.equal(0);
    expect(s.registry.draining()).to.deep.equal([]);
    expect(index.size(gone.index)).to.equal(0);
    // Now its index is free for the next newcomer.
    expect(s.registry.add(spec(7)).added[0]!.index).to.equal(gone.index);
  });

  it('prefix-hash: removing an engine moves only its own keys (the ring follows)', () => {
    const s = sched(4, 'prefix-hash');
    const prompts = Array.from({ length: 200 }, (_, k) => text(50 + k, 300));
    const before = prompts.map((p) => s.route(request({ prefix: p })).decision.endpoint.id);
    s.registry.remove(spec(2).id);
    const after = prompts.map((p) => s.route(request({ prefix: p })).decision.endpoint.id);
    let moved = 0;
    for (let k = 0; k < prompts.length; k++) {
      if (before[k] === spec(2).id) expect(after[k]).to.not.equal(spec(2).id);
      else if (after[k] !== before[k]) moved++;
    }
    expect(moved, 'keys of surviving engines that moved').to.equal(0);
  });

  it('session stickiness to a leaver is dropped', () => {
    const s = sched(3, 'cache-aware', {
      strategy: { name: 'cache-aware', plugins: { 'session-affinity-scorer': { header: 'x-session' } } },
    });
    const t = s.route(request({ prefix: text(9, 400), sessionKey: 'alice' }));
    t.finish({ aborted: false, status: 200 });
    const bound = t.decision.endpoint.id;
    const scorer = s.profile.scorers.map((w) => w.scorer).find((x): x is SessionAffinityScorer => x instanceof SessionAffinityScorer);
    expect(scorer?.boundTo('alice')).to.equal(bound);
    s.registry.remove(bound);
    expect(scorer?.boundTo('alice')).to.equal(undefined);
    const next = s.route(request({ prefix: text(10, 400), sessionKey: 'alice' }));
    expect(next.decision.endpoint.id).to.not.equal(bound);
  });

  it('an empty set answers NO_ENDPOINT and recovers when engines join', () => {
    const s = sched(1, 'round-robin');
    s.registry.replace([]);
    expect(() => s.route(request())).to.throw(/no endpoints/);
    s.registry.replace([spec(3)]);
    expect(s.route(request()).decision.endpoint.id).to.equal(spec(3).id);
  });
});
