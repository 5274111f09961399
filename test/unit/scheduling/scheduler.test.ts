import { expect } from 'chai';
import { isRouterError, RouterError } from '../../../src/core/errors.js';
import type { RouteRequest } from '../../../src/core/types.js';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import type { DecisionEvent } from '../../../src/scheduling/decision-events.js';
import type { GraphSpec } from '../../../src/scheduling/plugin-graph.js';
import type { Scheduler } from '../../../src/scheduling/scheduler.js';
import type { LifecyclePlugin, Plugin, RoutedHook } from '../../../src/framework/types.js';
import { builtinCatalog } from '../../../src/plugins/register-builtins.js';
import { PREFIX_INDEX } from '../../../src/plugins/multi/prefix-cache-plugin.js';
import { createLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { config, fakeType, request, text } from '../builders.js';

/** The test plugins (by type = name) plus a max-score picker; `scored` go into the one profile. */
function graph(types: readonly string[], scored: readonly string[] = []): GraphSpec {
  return {
    plugins: [...types.map((type) => ({ type })), { type: 'max-score-picker' }],
    schedulingProfiles: [{ name: 'p', plugins: [...scored.map((pluginRef) => ({ pluginRef })), { pluginRef: 'max-score-picker' }] }],
  };
}

function make(n = 4, strategy: 'cache-aware' | 'round-robin' = 'cache-aware'): { s: Scheduler; clock: ManualClock } {
  const clock = new ManualClock(0);
  return { s: createScheduler(config(n, { strategy, fallbacks: 2 }), { clock, rng: seededRng(1) }), clock };
}

describe('Scheduler', () => {
  it('counts a routed request in flight on the chosen endpoint until finish, exactly once', () => {
    const { s } = make();
    const t = s.route(request({ prefix: text(1, 256), promptTokens: 64 }));
    const i = t.decision.endpoint.index;
    expect(s.registry.inflight.requests(i)).to.equal(1);
    expect(s.registry.inflight.promptTokens(i)).to.equal(64);
    t.finish({ aborted: false, status: 200 });
    t.finish({ aborted: true });
    expect(s.registry.inflight.requests(i)).to.equal(0);
    expect(s.registry.inflight.promptTokens(i)).to.equal(0);
    expect(s.registry.inflight.totalRequests()).to.equal(0);
  });

  it('returns to zero accounting after many overlapping requests finish in any order', () => {
    const { s } = make(5);
    const rng = seededRng(3);
    const open = Array.from({ length: 60 }, (_, k) => s.route(request({ prefix: text(k % 7, 200), promptTokens: 10 + k })));
    while (open.length > 0) open.splice(rng.int(open.length), 1)[0]!.finish({ aborted: false });
    expect(s.registry.inflight.totalRequests()).to.equal(0);
    for (let e = 0; e < 5; e++) expect(s.registry.inflight.promptTokens(e)).to.equal(0);
  });

  it('on a fleet reports every candidate, best first, though the pick ordered only the head', () => {
    const clock = new ManualClock(0);
    const s = createScheduler(config(40, { strategy: 'cache-aware', fallbacks: 16 }), { clock, rng: seededRng(4) });
    const open = Array.from({ length: 30 }, (_, k) => s.route(request({ prefix: text(k % 5, 640), promptTokens: 100 + k })));
    const d = s.route(request({ prefix: text(2, 640) })).decision;
    expect(d.fallbacks).to.have.length(16);
    expect(d.candidates).to.have.length(40);
    expect(new Set(d.candidates.map((c) => c.endpointId)).size).to.equal(40);
    expect(d.candidates.map((c) => c.endpointId).slice(0, 17)).to.deep.equal([d.endpoint.id, ...d.fallbacks.map((f) => f.id)]);
    for (let k = 1; k < d.candidates.length; k++) expect(d.candidates[k - 1]!.total).to.be.at.least(d.candidates[k]!.total);
    for (const t of open) t.finish({ aborted: false });
  });

  it('fills the decision: fallbacks (distinct, not the chosen), candidates, blocks, strategy', () => {
    const { s } = make(4);
    const prefix = text(2, 640);
    s.route(request({ prefix })).finish({ aborted: false });
    const d = s.route(request({ prefix })).decision;
    expect(d.strategy).to.equal('cache-aware');
    expect(d.fallbacks).to.have.length(2);
    expect(d.fallbacks.map((f) => f.id)).to.not.include(d.endpoint.id);
    expect(new Set(d.fallbacks.map((f) => f.id)).size).to.equal(2);
    expect(d.totalBlocks).to.equal(10);
    expect(d.matchedBlocks).to.equal(10);
    expect(d.reason).to.equal('affinity');
    expect(d.candidates).to.have.length(4);
    expect(d.candidates[0]!.endpointId).to.equal(d.endpoint.id);
    expect(Object.keys(d.candidates[0]!.scores)).to.include.members(['prefix-cache', 'queue-scorer', 'kv-usage-scorer']);
    expect(d.candidates[0]!.scores['prefix-cache']).to.equal(1);
    // total = Σ clamped score × weight over the profile's scorers
    for (const c of d.candidates) {
      const sum = s.profile.scorers.reduce((acc, ws) => acc + c.scores[ws.scorer.name]! * ws.weight, 0);
      expect(c.total).to.be.closeTo(sum, 1e-9);
    }
  });

  it('throws NO_ENDPOINT for an empty subset and reports the rejection', () => {
    const { s } = make();
    const events: DecisionEvent[] = [];
    s.onDecision((e) => events.push(e));
    let err: unknown;
    try {
      s.route(request({ subset: [] }));
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'NO_ENDPOINT')).to.equal(true);
    expect(events.map((e) => e.kind)).to.deep.equal(['rejected']);
    expect(s.registry.inflight.totalRequests()).to.equal(0);
  });

  it('routes only inside the subset hint', () => {
    const { s } = make(4);
    const subset = ['127.0.0.1:9002', '127.0.0.1:9004'];
    for (let k = 0; k < 30; k++) {
      const d = s.route(request({ prefix: text(k, 100), subset })).decision;
      expect(subset).to.include(d.endpoint.id);
      expect(d.fallbacks.every((f) => subset.includes(f.id))).to.equal(true);
    }
  });

  it('emits routed and finished events; a throwing listener does not break routing', () => {
    const { s, clock } = make();
    const events: DecisionEvent[] = [];
    const lines: string[] = [];
    const logged = createScheduler(config(2), {
      clock,
      rng: seededRng(1),
      logger: createLogger({ level: 'warn', write: (l) => lines.push(l) }),
    });
    logged.onDecision(() => {
      throw new Error('boom');
    });
    logged.route(request()).finish({ aborted: false });
    expect(lines.some((l) => l.includes('decision listener failed'))).to.equal(true);

    const off = s.onDecision((e) => events.push(e));
    const t = s.route(request({ prefix: text(9, 128) }));
    clock.advance(250);
    t.finish({ aborted: false, status: 200 });
    t.finish({ aborted: false, status: 200 });
    off();
    s.route(request());
    expect(events.map((e) => e.kind)).to.deep.equal(['routed', 'finished']);
    const fin = events[1]!;
    expect(fin.kind === 'finished' && fin.durationMs).to.equal(250);
    const routed = events[0]!;
    expect(routed.kind === 'routed' && routed.timings.map((x) => x.plugin)).to.include.members(['prefix-cache', 'cold-request-placement']);
  });

  it('measures decisionMicros with the injected clock (up to the pick, not the hooks)', () => {
    const clock = new ManualClock(0);
    const catalog = builtinCatalog()
      .register(
        fakeType(
          'slow-scorer',
          (name) => ({ name, score: (_s: unknown, cs: readonly unknown[]) => (clock.advance(0.04), cs.map(() => 1)) }) as Plugin,
        ),
      )
      .register(fakeType('slow-hook', (name) => ({ name, onRouted: () => clock.advance(1) }) as RoutedHook));
    const s = createScheduler(config(2), {
      clock,
      rng: seededRng(1),
      catalog,
      graph: graph(['slow-scorer', 'slow-hook'], ['slow-scorer']),
    });
    const events: DecisionEvent[] = [];
    s.onDecision((e) => events.push(e));
    const d = s.route(request()).decision;
    expect(d.decisionMicros).to.be.closeTo(40, 1e-6);
    const routed = events[0]!;
    expect(routed.kind === 'routed' && routed.routeMicros).to.be.closeTo(1040, 1e-6);
  });

  it('keeps the decision when a routed or completed hook throws', () => {
    const catalog = builtinCatalog().register(
      fakeType(
        'bad',
        (name) =>
          ({
            name,
            onRouted: () => {
              throw new Error('routed boom');
            },
            onCompleted: () => {
              throw new RouterError('INTERNAL', 'completed boom');
            },
          }) as Plugin,
      ),
    );
    const s = createScheduler(config(2), { clock: new ManualClock(), rng: seededRng(1), catalog, graph: graph(['bad']) });
    const t = s.route(request());
    expect(s.registry.inflight.totalRequests()).to.equal(1);
    t.finish({ aborted: false });
    expect(s.registry.inflight.totalRequests()).to.equal(0);
  });

  it('starts and stops lifecycle plugins once, aborting their signal on stop', () => {
    const log: string[] = [];
    let signal: AbortSignal | undefined;
    const catalog = builtinCatalog().register(
      fakeType(
        'bg',
        (name) =>
          ({
            name,
            onCompleted: () => {},
            start: (s: AbortSignal) => {
              signal = s;
              log.push('start');
            },
            stop: () => void log.push('stop'),
          }) as LifecyclePlugin,
      ),
    );
    const s = createScheduler(config(2), { clock: new ManualClock(), rng: seededRng(1), catalog, graph: graph(['bg']) });
    expect(s.lifecycle).to.equal('new');
    s.start();
    s.start();
    expect(signal?.aborted).to.equal(false);
    s.stop();
    s.stop();
    s.start();
    expect(log).to.deep.equal(['start', 'stop']);
    expect(signal?.aborted).to.equal(true);
    expect(s.lifecycle).to.equal('stopped');
    // Routing still works on the state it has (requests draining through the edge).
    const r: RouteRequest = request();
    expect(s.route(r).decision.endpoint).to.not.equal(undefined);
  });

  it('exposes endpoints and the shared prefix index', () => {
    const { s } = make(3);
    expect(s.endpoints().map((e) => e.id)).to.deep.equal(['127.0.0.1:9001', '127.0.0.1:9002', '127.0.0.1:9003']);
    expect(s.strategy).to.equal('cache-aware');
    const index = s.service(PREFIX_INDEX);
    expect(index?.endpointCount).to.equal(3);
    const d = s.route(request({ prefix: text(4, 200) })).decision;
    expect(index?.size(d.endpoint.index)).to.equal(3);
    expect(make(2, 'round-robin').s.service(PREFIX_INDEX)).to.equal(undefined);
  });
});
