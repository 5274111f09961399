/**
 * Preset behaviour end to end through createScheduler (config → plugin graph → decisions),
 * with a ManualClock and seeded Rng.
 */
import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import type { RouteTicket } from '../../../src/core/routing-service.js';
import type { DecisionReason } from '../../../src/core/types.js';
import type { LoadSource } from '../../../src/endpoints/registry.js';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import { definePlugin, PluginCatalog } from '../../../src/framework/plugin-api.js';
import { builtinCatalog } from '../../../src/plugins/register-builtins.js';
import { parseConfig } from '../../../src/config/parse-config.js';
import { int, section } from '../../../src/util/schema.js';
import { roundRobinPicker } from '../../../src/plugins/picker/round-robin-picker.js';
import type { Scheduler } from '../../../src/scheduling/scheduler.js';
import type { StrategyName } from '../../../src/config/types.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { config, request, text } from '../builders.js';

type Over = Parameters<typeof config>[1];

function sched(n: number, strategy: StrategyName, over: Over = {}, seed = 1, loadSources: LoadSource[] = []): Scheduler {
  return createScheduler(config(n, { strategy, ...over }), { clock: new ManualClock(), rng: seededRng(seed), loadSources });
}

function counts(s: Scheduler, tickets: RouteTicket[]): number[] {
  const c = new Array<number>(s.endpoints().length).fill(0);
  for (const t of tickets) c[t.decision.endpoint.index]!++;
  return c;
}

describe('createScheduler strategies', () => {
  it('refuses a graph whose plugin types the catalog does not have (BAD_CONFIG)', () => {
    const catalog = new PluginCatalog().register(roundRobinPicker);
    let err: unknown;
    try {
      createScheduler(config(2, { strategy: 'power-of-two' }), { clock: new ManualClock(), rng: seededRng(1), catalog });
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
    expect((err as Error).message).to.match(/plugins\[0\]\.type: unknown plugin type "model-subset-filter" \(known: round-robin-picker\)/);
  });

  describe('round-robin', () => {
    it('gives every endpoint exactly its share, in rotation', () => {
      const s = sched(4, 'round-robin');
      const tickets = Array.from({ length: 100 }, (_, k) => s.route(request({ prefix: text(1, 300 + k) })));
      expect(counts(s, tickets)).to.deep.equal([25, 25, 25, 25]);
      expect(tickets.slice(0, 4).map((t) => t.decision.endpoint.index)).to.deep.equal([0, 1, 2, 3]);
      expect(tickets[0]!.decision.reason).to.equal('round-robin');
    });
  });

  describe('random', () => {
    it('spreads uniformly and is reproducible from the seed', () => {
      const run = (seed: number): number[] => {
        const s = sched(4, 'random', {}, seed);
        return counts(
          s,
          Array.from({ length: 2000 }, () => s.route(request())),
        );
      };
      const a = run(7);
      for (const c of a) expect(c).to.be.within(400, 600);
      expect(run(7)).to.deep.equal(a);
      expect(run(8)).to.not.deep.equal(a);
    });
  });

  describe('least-request', () => {
    it('keeps in-flight counts level while requests stay open', () => {
      const s = sched(4, 'least-request');
      const tickets = Array.from({ length: 40 }, () => s.route(request()));
      expect(counts(s, tickets)).to.deep.equal([10, 10, 10, 10]);
      expect(tickets[0]!.decision.reason).to.equal('load');
    });

    it('prefers the endpoint that drained, and breaks ties at random', () => {
      const s = sched(3, 'least-request');
      const t = [s.route(request()), s.route(request()), s.route(request())];
      t[1]!.finish({ aborted: false });
      expect(s.route(request()).decision.endpoint.index).to.equal(t[1]!.decision.endpoint.index);
      const firsts = new Set<number>();
      for (let seed = 1; seed <= 20; seed++) firsts.add(sched(3, 'least-request', {}, seed).route(request()).decision.endpoint.index);
      expect(firsts.size).to.equal(3);
    });
  });

  describe('prefix-hash', () => {
    it('pins a prefix to one endpoint regardless of load (the hotspot baseline)', () => {
      const s = sched(4, 'prefix-hash');
      const system = text(11, 2048);
      const tickets = Array.from({ length: 50 }, (_, k) => s.route(request({ prefix: system + text(100 + k, 200) })));
      const c = counts(s, tickets);
      expect(Math.max(...c)).to.equal(50);
      expect(tickets[0]!.decision.reason).to.equal('hash');
    });

    it('spreads distinct prefixes', () => {
      const s = sched(4, 'prefix-hash');
      const c = counts(
        s,
        Array.from({ length: 400 }, (_, k) => s.route(request({ prefix: text(1000 + k, 256) }))),
      );
      for (const v of c) expect(v).to.be.within(50, 170);
    });
  });

  describe('cache-aware', () => {
    // The core profile (docs/scheduling.md): hot-prefix replication, a load-signal add-on
    // (opt-in), is switched off explicitly so the imbalance escape is tested on its own.
    // The imbalance escape at 8 (the queue scorer's softQueue with it), cache-aware with adjustments.
    const ESCAPE_8 = { 'imbalance-escape-filter': { absThreshold: 8, relThreshold: 1.5 }, 'queue-scorer': { softQueue: 8 } };
    const tuned = (plugins: Record<string, unknown> = {}, weights: Record<string, number> = {}): Over => ({
      strategy: { name: 'cache-aware', plugins: { ...ESCAPE_8, ...plugins } as Record<string, Record<string, unknown> | false>, weights },
    });
    const over: Over = tuned();

    it('routes a repeated prefix back to the endpoint that has it (affinity)', () => {
      const s = sched(4, 'cache-aware', over);
      const system = text(21, 1024);
      const first = s.route(request({ prefix: system + text(1, 100) }));
      first.finish({ aborted: false });
      for (let k = 0; k < 10; k++) {
        const t = s.route(request({ prefix: system + text(2 + k, 100) }));
        expect(t.decision.endpoint.index).to.equal(first.decision.endpoint.index);
        expect(t.decision.reason).to.equal('affinity');
        expect(t.decision.matchedBlocks).to.equal(16);
        t.finish({ aborted: false });
      }
      expect(first.decision.reason).to.equal('cold');
    });

    it('spreads cold requests over the least loaded endpoints, never always the first', () => {
      const s = sched(4, 'cache-aware', over);
      // Finished one by one: all idle each time, so the recent cold picks break the ties.
      const seq = Array.from({ length: 40 }, (_, k) => {
        const t = s.route(request({ prefix: text(500 + k, 256) }));
        t.finish({ aborted: false });
        expect(t.decision.reason).to.equal('cold');
        return t;
      });
      expect(counts(s, seq)).to.deep.equal([10, 10, 10, 10]);
      expect(new Set(seq.slice(0, 4).map((t) => t.decision.endpoint.index)).size, 'the first four groups on four engines').to.equal(4);
      // Without cold spread the ties are broken at random: uneven, but never all on one.
      const r = sched(4, 'cache-aware', tuned({ 'cold-request-placement': { spread: false } }));
      const rand = Array.from({ length: 40 }, (_, k) => {
        const t = r.route(request({ prefix: text(500 + k, 256) }));
        t.finish({ aborted: false });
        return t;
      });
      for (const c of counts(r, rand)) expect(c).to.be.within(3, 20);
      expect(counts(r, rand)).to.not.deep.equal([10, 10, 10, 10]);
      // Kept open: each cold request goes to a least-loaded endpoint, so counts stay level.
      const s2 = sched(4, 'cache-aware', over);
      const open = Array.from({ length: 20 }, (_, k) => s2.route(request({ prefix: text(900 + k, 256) })));
      expect(counts(s2, open)).to.deep.equal([5, 5, 5, 5]);
    });

    it('cold spread only breaks ties: a shorter prefill queue wins over fewer placements', () => {
      const s = sched(2, 'cache-aware', over, 3);
      // Three cold picks alternate over two idle engines: 0/1 get 2 and 1 (or 1 and 2).
      const first = Array.from({ length: 3 }, (_, k) => {
        const t = s.route(request({ prefix: text(700 + k, 256) }));
        t.finish({ aborted: false });
        return t.decision.endpoint.index;
      });
      const busier = first.filter((i) => i === first[0]).length === 2 ? first[0]! : 1 - first[0]!;
      // A request in prefill on the less-used engine: the busier-by-placements one is now the shorter queue.
      const held = s.route(request({ prefix: text(800, 256) }));
      expect(held.decision.endpoint.index, 'tie broken towards fewer placements').to.equal(1 - busier);
      const next = s.route(request({ prefix: text(801, 256) }));
      expect(next.decision.endpoint.index, 'prefill queue 0 beats fewer placements').to.equal(busier);
      held.finish({ aborted: false });
      next.finish({ aborted: false });
    });

    it('keeps affinity under moderate load and escapes only past both imbalance thresholds', () => {
      const s = sched(4, 'cache-aware', over);
      const system = text(31, 1024);
      const first = s.route(request({ prefix: system }));
      const home = first.decision.endpoint.index;
      first.finish({ aborted: false });
      const held: RouteTicket[] = [s.route(request({ prefix: system }))]; // in flight on home: 1
      expect(held[0]!.decision.endpoint.index).to.equal(home);
      // Pile load on `home` directly through its accounting (8 in flight vs 0 elsewhere).
      const leases = Array.from({ length: 7 }, () => s.registry.inflight.acquire(home, 100));
      const atEight = s.route(request({ prefix: system }));
      expect(atEight.decision.endpoint.index, 'gap 8 is not > abs 8').to.equal(home);
      expect(atEight.decision.reason).to.equal('affinity');
      // atEight itself is in flight now: home has 9 → imbalance escape.
      const escaped = s.route(request({ prefix: system }));
      expect(escaped.decision.endpoint.index).to.not.equal(home);
      expect(escaped.decision.reason).to.equal('imbalance');
      expect(escaped.decision.notes?.some((n) => n.includes('imbalance escape'))).to.equal(true);
      // The escaped request taught its new endpoint the prefix: affinity continues there.
      const next = s.route(request({ prefix: system }));
      expect(next.decision.endpoint.index).to.equal(escaped.decision.endpoint.index);
      expect(next.decision.reason).to.equal('affinity');
      for (const l of leases) l.release();
    });

    it('with replication on, spills a hot prefix at high water, long before the imbalance escape', () => {
      const s = sched(4, 'cache-aware', { strategy: { name: 'cache-aware', plugins: { 'hotspot-replication-filter': {} } } });
      const system = text(33, 1024);
      const held: RouteTicket[] = [s.route(request({ prefix: system }))];
      const home = held[0]!.decision.endpoint.index;
      let spilled: RouteTicket | undefined;
      for (let k = 0; k < 31 && !spilled; k++) {
        const t = s.route(request({ prefix: system }));
        held.push(t);
        if (t.decision.endpoint.index !== home) spilled = t;
      }
      expect(spilled, 'the hot group grew onto a second engine').to.not.equal(undefined);
      expect(spilled!.decision.reason).to.equal('spill');
      // Grown once its home passed high water (6 in flight), far below the escape's 32.
      expect(held.length - 1).to.be.within(6, 8);
      for (const t of held) t.finish({ aborted: false });
    });

    it('labels "load" when queue weight outweighs a partial match', () => {
      const s = sched(3, 'cache-aware', tuned({}, { 'prefix-cache': 1, 'queue-scorer': 2, 'kv-usage-scorer': 0 }));
      const shared = text(41, 256); // 4 of 16 blocks shared
      const a = s.route(request({ prefix: shared + text(42, 768) }));
      const held = s.route(request({ prefix: text(43, 64) })); // keep others comparable
      held.finish({ aborted: false });
      const b = s.route(request({ prefix: shared + text(44, 768) }));
      expect(b.decision.endpoint.index).to.not.equal(a.decision.endpoint.index);
      expect(b.decision.reason).to.equal('load');
      expect(b.decision.matchedBlocks).to.equal(0);
    });

    it('with coldRouting scores, prefers lower KV usage among equally good cold candidates, and never picks an unhealthy endpoint', () => {
      const kv = [0.9, 0.1, 0.5, 0.3];
      const metrics: LoadSource = {
        name: 'fake-metrics',
        enrich: (e, base) => ({ ...base, kvUsage: kv[e.index]!, metricsAgeMs: 10, healthy: e.index !== 1 }),
      };
      const s = sched(4, 'cache-aware', tuned({ 'cold-request-placement': false }), 1, [metrics]);
      for (let k = 0; k < 10; k++) {
        const t = s.route(request({ prefix: text(700 + k, 256) }));
        expect(t.decision.endpoint.index).to.equal(3);
        t.finish({ aborted: false });
      }
    });

    it('by default places cold requests on the shortest prefill queue, ignoring KV usage and decoding requests', () => {
      let waitingOn = -1;
      const metrics: LoadSource = {
        name: 'fake-metrics',
        enrich: (e, base) => ({ ...base, kvUsage: e.index === waitingOn ? 0.05 : 0.9, metricsAgeMs: 10 }),
      };
      const s = sched(4, 'cache-aware', over, 1, [metrics]);
      // One engine has a request waiting for its first byte (and the lowest KV usage); two
      // requests elsewhere are decoding.
      const waiting = s.route(request({ prefix: text(800, 256) }));
      waitingOn = waiting.decision.endpoint.index;
      const decoding = [s.route(request({ prefix: text(801, 256) })), s.route(request({ prefix: text(802, 256) }))];
      for (const t of decoding) t.firstByte?.();
      const seen = new Set<number>();
      for (let k = 0; k < 12; k++) {
        const t = s.route(request({ prefix: text(810 + k, 256) }));
        seen.add(t.decision.endpoint.index);
        expect(t.decision.reason).to.equal('cold');
        t.firstByte?.();
        t.finish({ aborted: false });
      }
      expect([...seen]).to.not.include(waitingOn, 'the engine with a prefill waiting is avoided despite its low KV usage');
      expect(seen.size).to.equal(3);
      waiting.finish({ aborted: false });
      for (const t of decoding) t.finish({ aborted: false });
    });

    it('only considers endpoints serving the model', () => {
      const s = createScheduler(
        config(3, {
          strategy: 'cache-aware',
          endpoints: [
            { address: '127.0.0.1:9001', models: ['a'] },
            { address: '127.0.0.1:9002', models: ['b'] },
            { address: '127.0.0.1:9003', models: ['a'] },
          ],
        }),
        { clock: new ManualClock(), rng: seededRng(2) },
      );
      const seen = new Set<number>();
      for (let k = 0; k < 30; k++) seen.add(s.route(request({ model: 'a', prefix: text(k, 200) })).decision.endpoint.index);
      expect([...seen].sort()).to.deep.equal([0, 2]);
      let err: unknown;
      try {
        s.route(request({ model: 'c' }));
      } catch (e) {
        err = e;
      }
      expect(isRouterError(err, 'NO_ENDPOINT')).to.equal(true);
    });

    it('labels every decision with a reason from the closed set', () => {
      const s = sched(4, 'cache-aware', over);
      const reasons = new Set<DecisionReason>();
      for (let k = 0; k < 60; k++) reasons.add(s.route(request({ prefix: text(k % 5, 400) })).decision.reason);
      expect([...reasons].every((r) => ['affinity', 'load', 'cold', 'imbalance'].includes(r))).to.equal(true);
      expect(reasons.has('affinity')).to.equal(true);
      expect(reasons.has('cold')).to.equal(true);
    });
  });
});

describe('createScheduler with a plugin that is not a built-in', () => {
  it('is configured from the document like any other: its own schema validates, its factory gets only (name, parameters, handle)', () => {
    const seen: unknown[] = [];
    const pinned = definePlugin({
      type: 'pin-endpoint-picker',
      description: 'test plugin: always picks the candidate at `index`',
      parameters: section({ index: int({ min: 0 }).default(0) }),
      create: (name, p, handle) => {
        seen.push(Object.keys(handle).sort());
        return {
          name,
          pick: (_s: unknown, cs: readonly unknown[]) => ({ order: [Math.min(p.index, cs.length - 1)], reason: 'load' as const }),
        };
      },
    });
    const catalog = builtinCatalog().register(pinned);
    const doc = {
      apiVersion: 'cacheroute/v1',
      endpoints: ['127.0.0.1:9001', '127.0.0.1:9002', '127.0.0.1:9003'],
      engineMetrics: { enabled: false },
      plugins: [{ type: 'model-subset-filter' }, { type: 'pin-endpoint-picker', name: 'pin', parameters: { index: 2 } }],
      schedulingProfiles: [{ name: 'pinned', plugins: [{ pluginRef: 'model-subset-filter' }, { pluginRef: 'pin' }] }],
    };
    const s = createScheduler(parseConfig(doc, { catalog }), { clock: new ManualClock(), rng: seededRng(1), catalog });
    expect(s.route(request()).decision.endpoint.index).to.equal(2);
    expect(s.strategy).to.equal('pinned');
    expect(seen).to.deep.equal([['clock', 'endpoints', 'logger', 'plugin', 'rng', 'shared', 'signals']]);
    expect(() => parseConfig({ ...doc, plugins: [{ type: 'pin-endpoint-picker', parameters: { index: -1 } }] }, { catalog })).to.throw(
      /plugins\[0\]\.parameters\.index: expected integer >= 0, got -1/,
    );
    expect(() => parseConfig(doc)).to.throw(/unknown plugin type "pin-endpoint-picker"/);
  });
});
