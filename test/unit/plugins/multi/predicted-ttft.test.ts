/**
 * The predicted-ttft and sticky-until-saturated presets end to end through createScheduler
 * (prefix index → ttft-model → picker), with a ManualClock and seeded Rng.
 */
import { expect } from 'chai';
import { isRouterError } from '../../../../src/core/errors.js';
import type { RouteTicket } from '../../../../src/core/routing-service.js';
import { createScheduler } from '../../../../src/compose/create-scheduler.js';
import type { StrategyName } from '../../../../src/config/types.js';
import { parseObjectiveMs } from '../../../../src/plugins/multi/predicted-ttft.js';
import type { EngineTtftStats } from '../../../../src/plugins/multi/ttft-model-plugin.js';
import type { Scheduler } from '../../../../src/scheduling/scheduler.js';
import type { LoadSource } from '../../../../src/endpoints/registry.js';
import { ManualClock } from '../../../../src/util/clock.js';
import { seededRng } from '../../../../src/util/rng.js';
import { config, request, text } from '../../builders.js';

function sched(
  n: number,
  strategy: StrategyName | Record<string, unknown>,
  clock = new ManualClock(),
  loadSources: LoadSource[] = [],
): Scheduler {
  const over = typeof strategy === 'string' ? { strategy } : strategy;
  return createScheduler(config(n, over as Parameters<typeof config>[1]), { clock, rng: seededRng(1), loadSources });
}

/** predicted-ttft with its picker's parameters overridden. */
function tuned(parameters: Record<string, unknown>): Record<string, unknown> {
  return { strategy: { name: 'predicted-ttft', plugins: { 'predicted-ttft': parameters } } };
}

/** A streamed request whose prompt is `chars` characters of text `seed` (4 chars per token). */
function req(seed: number, chars: number, over: Parameters<typeof request>[0] = {}) {
  return request({ prefix: text(seed, chars), stream: true, ...over });
}

function engineStats(s: Scheduler): EngineTtftStats[] {
  const states = s.pluginStates() as { name: string; state: { engines: EngineTtftStats[] } }[];
  return states.find((p) => p.name === 'ttft-model')!.state.engines;
}

function done(t: RouteTicket): void {
  t.firstByte?.();
  t.finish({ aborted: false, status: 200 });
}

/**
 * A session's first turn lands on one engine, ~5,000 uncached tokens are queued there (~590 ms
 * predicted), then its next turn comes: recomputing the 2,000-token history on the idle engine
 * (~470 ms with its context cost) is faster for that turn. True if the turn stayed with its history.
 */
function turnStays(s: Scheduler): boolean {
  const history = text(1, 8000);
  const first = s.route(req(0, 0, { prefix: history }));
  done(first);
  const home = first.decision.endpoint.id;
  const held = s.route(req(50, 20_000, { subset: [home] }));
  const turn = s.route(req(0, 0, { prefix: history + text(2, 200) }));
  done(held);
  done(turn);
  return turn.decision.endpoint.id === home;
}

describe('predicted-ttft preset', () => {
  it('spreads cold requests over idle engines (near-ties go to the fewest recent placements)', () => {
    const s = sched(4, 'predicted-ttft');
    const used = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const t = s.route(req(100 + i, 2000));
      used.add(t.decision.endpoint.index);
      done(t);
    }
    expect(used.size).to.equal(4);
  });

  it("does not count blocks still being prefilled as hits: a burst of one cold prompt's siblings spreads", () => {
    const s = sched(8, 'predicted-ttft');
    const prompt = text(7, 2048);
    const ts = Array.from({ length: 24 }, () => s.route(req(0, 0, { prefix: prompt }))); // none past its prefill
    const per = new Map<number, number>();
    for (const t of ts) per.set(t.decision.endpoint.index, (per.get(t.decision.endpoint.index) ?? 0) + 1);
    expect(per.size, [...per.values()].join(',')).to.be.at.least(4);
    expect(Math.max(...per.values())).to.be.at.most(6);
    for (const t of ts) done(t);
    // Once the first prefill is over its blocks are hits: the next sibling joins an engine that holds them.
    const holders = new Set(per.keys());
    const next = s.route(req(0, 0, { prefix: prompt }));
    expect(holders.has(next.decision.endpoint.index)).to.equal(true);
    expect(next.decision.reason).to.equal('affinity');
    done(next);
  });

  it('follows the cache while the holder is idle, and leaves it when the prefill queued there costs more than the hit saves', () => {
    const s = sched(2, 'predicted-ttft');
    const system = text(1, 8000); // ~2,000 tokens shared
    const first = s.route(req(0, 0, { prefix: system + text(2, 200) }));
    done(first);
    const home = first.decision.endpoint.index;
    const again = s.route(req(0, 0, { prefix: system + text(3, 200) }));
    expect(again.decision.endpoint.index).to.equal(home);
    expect(again.decision.reason).to.equal('affinity');
    done(again);
    // Long cold prompts pile up on the holder (no first byte yet): ~3,000 uncached tokens each.
    const held: RouteTicket[] = [];
    for (let i = 0; i < 4; i++) {
      const t = s.route(req(50 + i, 12_000, { subset: [first.decision.endpoint.id] }));
      held.push(t);
    }
    const away = s.route(req(0, 0, { prefix: system + text(4, 200) }));
    expect(away.decision.endpoint.index).to.equal(1 - home, 'queued prefill outweighs the cache hit');
    expect(away.decision.reason).to.equal('load');
    for (const t of held) done(t);
  });

  it("prices future reuse: a session's turn stays with its history unless the queue there costs more than recomputing it elsewhere and keeping two copies", () => {
    expect(turnStays(sched(2, tuned({ reuseWeight: 0, evictionWeight: 0 }))), 'greedy: moves the turn').to.equal(false);
    // Priced: 2 × 2,000 tokens × 0.106 ms ≈ 424 ms more on the other engine, more than the ~120 ms the queue costs.
    expect(turnStays(sched(2, 'predicted-ttft')), 'priced: stays').to.equal(true);
  });

  it("scales the lost-reuse charge by the fleet's KV load: with its KV mostly free the fleet lets the turn move", () => {
    const route = (kvUsage: number, parameters: Record<string, unknown> = {}) => {
      const metrics: LoadSource = { name: 'fake-metrics', enrich: (_e, base) => ({ ...base, kvUsage, metricsAgeMs: 10 }) };
      return turnStays(sched(2, tuned(parameters), new ManualClock(), [metrics]));
    };
    // Mean KV usage 0.6 ≥ reuseKvUsage 0.5: the whole charge (~424 ms) against the ~120 ms queue. No eviction term, to isolate it.
    expect(route(0.6, { evictionWeight: 0 }), 'KV-loaded fleet: stays').to.equal(true);
    // 0.02: the charge is 0.04 of it (~17 ms), less than the queue: the turn moves.
    expect(route(0.02, { evictionWeight: 0 }), 'KV mostly free: moves').to.equal(false);
    expect(route(0.02, { evictionWeight: 0, reuseKvUsage: 0 }), 'unscaled: stays').to.equal(true);
  });

  it('charges lost reuse per request queued on the engine that would recompute it', () => {
    const route = (queuedOnOther: number, reuseQueueWeight: number) => {
      const s = sched(2, tuned({ reuseWeight: 0, evictionWeight: 0, reuseQueueWeight }));
      const [a, b] = s.endpoints();
      const history = text(1, 8000); // ~2,000 tokens only a holds
      done(s.route(req(0, 0, { prefix: history, subset: [a!.id] })));
      // ~5,000 uncached tokens queued on a (~590 ms there); short requests (~125 tokens each) queued on b.
      const held = [s.route(req(50, 20_000, { subset: [a!.id] }))];
      for (let i = 0; i < queuedOnOther; i++) held.push(s.route(req(60 + i, 500, { subset: [b!.id] })));
      const turn = s.route(req(0, 0, { prefix: history + text(2, 200) }));
      for (const h of held) done(h);
      done(turn);
      return turn.decision.endpoint.id === a!.id;
    };
    // Recomputing the history on b (~490 ms with one short request ahead) beats a's queue without the charge.
    expect(route(1, 0), 'no queue charge: moves').to.equal(false);
    // 6 × 2,000 tokens × 0.106 ms ≈ 1.3 s per request queued on b: stays.
    expect(route(1, 6), 'one request queued on b: stays').to.equal(true);
    expect(route(0, 6), 'nothing queued on b: moves').to.equal(false);
  });

  it('charges no lost reuse for a prefix two engines hold (a shared template may spread)', () => {
    const s = sched(3, 'predicted-ttft');
    const [a, b, c] = s.endpoints();
    const system = text(3, 8000); // ~2,000 tokens on a and b
    for (const e of [a!, b!]) done(s.route(req(0, 0, { prefix: system + text(4 + e.index, 200), subset: [e.id] })));
    // ~5,000 uncached tokens queued on each holder: the idle third engine is faster even with the template to compute,
    // and no lost-reuse charge (424 ms) holds it back, as it would for a prefix one engine alone held.
    const held = [a!, b!].map((e, i) => s.route(req(60 + i, 20_000, { subset: [e.id] })));
    const t = s.route(req(0, 0, { prefix: system + text(9, 200) }));
    expect(t.decision.endpoint.id).to.equal(c!.id);
    for (const h of held) done(h);
    done(t);
  });

  it('prices the eviction risk of a full KV cache: idle engines alike but for KV usage, the emptier one is chosen', () => {
    const kv = [0.95, 0.2];
    const metrics: LoadSource = { name: 'fake-metrics', enrich: (e, base) => ({ ...base, kvUsage: kv[e.index]!, metricsAgeMs: 10 }) };
    const s = sched(2, 'predicted-ttft', new ManualClock(), [metrics]);
    for (let i = 0; i < 6; i++) {
      const t = s.route(req(300 + i, 4000));
      expect(t.decision.endpoint.index).to.equal(1);
      done(t);
    }
    // Without the term the near-ties spread over both.
    const greedy = sched(2, tuned({ evictionWeight: 0 }), new ManualClock(), [metrics]);
    const used = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const t = greedy.route(req(300 + i, 4000));
      used.add(t.decision.endpoint.index);
      done(t);
    }
    expect(used.size).to.equal(2);
  });

  it("keeps an engine's reported waiting requests ahead only from stallKvUsage (0.8): below it the drain estimate stands", () => {
    const route = (kvUsage: number) => {
      const metrics: LoadSource = {
        name: 'fake-metrics',
        enrich: (e, base) => ({ ...base, kvUsage, waiting: e.index === 0 ? 1 : 0, metricsAgeMs: 10 }),
      };
      const clock = new ManualClock();
      const s = sched(2, 'predicted-ttft', clock, [metrics]);
      const [a, b] = s.endpoints();
      // ~5,000 tokens sent to a and drained by the estimate 10 s later; ~1,000 tokens just sent to b.
      const big = s.route(req(70, 20_000, { subset: [a!.id] }));
      clock.advance(10_000);
      const small = s.route(req(71, 4000, { subset: [b!.id] }));
      const t = s.route(req(72, 2000));
      for (const x of [big, small, t]) done(x);
      return t.decision.endpoint.id === a!.id;
    };
    expect(route(0.6), 'KV at 0.6: a is drained, so it is chosen').to.equal(true);
    expect(route(0.9), "KV at 0.9: a's waiting request counts as ahead (~5,000 tokens), b is chosen").to.equal(false);
  });

  it('learns a slow engine from first bytes: its coefficients rise and its online error falls', () => {
    const clock = new ManualClock();
    const s = sched(2, 'predicted-ttft', clock);
    const ids = s.endpoints().map((e) => e.id);
    // Engine 1 is 3x slower than the priors say; engine 0 matches them.
    for (let i = 0; i < 120; i++) {
      const target = ids[i % 2]!;
      const t = s.route(req(1000 + i, 2000 + (i % 7) * 400, { subset: [target] }));
      const tokens = t.request.promptTokens;
      const ms = 10 + 0.106 * tokens + 12.4 + 0.112 * tokens * (tokens / 2000);
      clock.advance(i % 2 === 1 ? 3 * ms : ms);
      done(t);
    }
    const [fast, slow] = engineStats(s);
    expect(slow!.samples).to.equal(60);
    expect(slow!.prefillTokensPerMs).to.be.below(fast!.prefillTokensPerMs / 1.5);
    expect(slow!.medianAbsPctError).to.be.below(0.1);
    expect(fast!.medianAbsPctError).to.be.below(0.1);
    expect(slow!.observations).to.equal(60);
    // A cold request now prefers the fast engine even though the slow one is as idle.
    let onFast = 0;
    for (let i = 0; i < 10; i++) {
      const t = s.route(req(5000 + i, 4000));
      if (t.decision.endpoint.id === ids[0]) onFast++;
      clock.advance(1000);
      done(t);
    }
    expect(onFast).to.be.at.least(7);
  });

  it("learns on the access-log path from the entry's first-body time, once per request, not from a request Envoy served elsewhere", () => {
    const clock = new ManualClock();
    const s = sched(2, 'predicted-ttft', clock);
    const ids = s.endpoints().map((e) => e.id);
    for (let i = 0; i < 60; i++) {
      const t = s.route(req(2000 + i, 2000 + (i % 5) * 800, { subset: [ids[1]!] }));
      const tokens = t.request.promptTokens;
      // Engine 1 is 3x slower than the priors; no first byte reaches the router, only the log.
      const ms = 3 * (10 + 0.106 * tokens + 12.4 + 0.112 * tokens * (tokens / 2000));
      clock.advance(ms + 400);
      t.finish({ aborted: false, status: 200, servedBy: ids[1]!, firstBodyMs: ms });
    }
    const of = (id: string) => engineStats(s).find((e) => e.endpointId === id)!;
    const slow = of(ids[1]!);
    expect(slow.samples).to.equal(60);
    expect(slow.observations).to.equal(60);
    expect(slow.medianAbsPctError).to.be.below(0.1);
    expect(slow.prefillTokensPerMs).to.be.below(1 / 0.106 / 1.5);
    // Both signals for one request: fitted once. Retried onto the other engine, or aborted: not at all.
    const both = s.route(req(9000, 2000, { subset: [ids[0]!] }));
    clock.advance(300);
    both.firstByte?.();
    both.finish({ aborted: false, status: 200, servedBy: ids[0]!, firstBodyMs: 300 });
    const retried = s.route(req(9001, 2000, { subset: [ids[0]!] }));
    retried.finish({ aborted: false, status: 200, servedBy: ids[1]!, firstBodyMs: 300 });
    const cut = s.route(req(9002, 2000, { subset: [ids[0]!] }));
    cut.finish({ aborted: true, status: 200, servedBy: ids[0]!, firstBodyMs: 300 });
    expect(of(ids[0]!).observations).to.equal(1);
    expect(of(ids[1]!).observations).to.equal(60);
    expect(of(ids[0]!).untimed + of(ids[1]!).untimed, 'every one of those had a time or did not count').to.equal(0);
  });

  it('counts a streamed answer that ended with no first-token time as untimed (an access log without the first-body tag)', () => {
    const clock = new ManualClock();
    const s = sched(1, 'predicted-ttft', clock);
    const id = s.endpoints()[0]!.id;
    const of = () => engineStats(s).find((e) => e.endpointId === id)!;
    for (let i = 0; i < 3; i++) {
      const t = s.route(req(100 + i, 2000));
      clock.advance(400);
      t.finish({ aborted: false, status: 200, servedBy: id });
    }
    // Not counted: an error, an aborted answer, a whole answer, and one the log timed.
    s.route(req(200, 2000)).finish({ aborted: false, status: 503, servedBy: id });
    s.route(req(201, 2000)).finish({ aborted: true, servedBy: id });
    s.route(req(202, 2000, { stream: false })).finish({ aborted: false, status: 200, servedBy: id });
    s.route(req(203, 2000)).finish({ aborted: false, status: 200, servedBy: id, firstBodyMs: 300 });
    expect(of().untimed).to.equal(3);
    expect(of().observations).to.equal(1);
  });

  it('does not learn from a whole (non-streamed) answer', () => {
    const clock = new ManualClock();
    const s = sched(1, 'predicted-ttft', clock);
    const t = s.route(req(7, 2000, { stream: false }));
    clock.advance(5000);
    done(t);
    expect(engineStats(s)[0]!.samples).to.equal(0);
  });

  it('with a TTFT objective: the engine meeting it with least headroom; a sheddable request nobody can serve in time gets OVERLOADED', () => {
    const s = sched(2, 'predicted-ttft');
    const [a, b] = s.endpoints();
    // Engine a gets ~6,000 uncached tokens queued (≈ 0.7 s ahead); b stays idle.
    const held = [0, 1].map((i) => s.route(req(60 + i, 12_000, { subset: [a!.id] })));
    const slo = (ms: number) => new Map([['x-slo-ttft-ms', String(ms)]]);
    // Both meet a generous objective: the busier one (least headroom) is chosen.
    expect(s.route(req(70, 800, { headers: slo(60_000) })).decision.endpoint.id).to.equal(a!.id);
    // Only b meets a tight one.
    expect(s.route(req(71, 800, { headers: slo(400) })).decision.endpoint.id).to.equal(b!.id);
    // Nobody meets 5 ms: priority 0 goes to the best prediction, priority -1 is shed.
    expect(s.route(req(72, 800, { headers: slo(5) })).decision.endpoint.id).to.equal(b!.id);
    let err: unknown;
    try {
      s.route(req(73, 800, { headers: slo(5), priority: -1 }));
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'OVERLOADED')).to.equal(true);
    expect((err as { retryAfterMs?: number }).retryAfterMs).to.be.at.least(1000);
    for (const t of held) done(t);
  });

  it('reads the objective header strictly', () => {
    expect(parseObjectiveMs('250')).to.equal(250);
    expect(parseObjectiveMs(' 1.5 ')).to.equal(1.5);
    for (const v of [undefined, '', '0', '-3', 'abc', 'Infinity', '1e9', '9'.repeat(20)])
      expect(parseObjectiveMs(v), String(v)).to.equal(undefined);
  });

  it('predicts an engine that left and came back from a new, empty lane (the per-index cache follows membership)', () => {
    const s = sched(2, 'predicted-ttft');
    const [a, b] = s.endpoints();
    const held = s.route(req(1, 40_000, { subset: [b!.id] })); // ~10,000 tokens queued on b
    const probe = s.route(req(2, 4000));
    expect(probe.decision.endpoint.id, 'b is busy').to.equal(a!.id);
    done(probe);
    const { index: _, ...spec } = b!;
    s.registry.remove(b!.id);
    done(held); // releases b's lease: its index is free again
    expect(s.registry.add(spec).added[0]!.index).to.equal(b!.index);
    // Both idle now: equal predictions, so equal scores (b's old lane would put 10,000 tokens ahead).
    const t = s.route(req(3, 4000));
    expect(t.decision.candidates.map((c) => c.scores['predicted-ttft'])).to.deep.equal([1, 1]);
    done(t);
  });

  it("drains its ledger at the rate it predicts a request's own prefill at, the context cost included", () => {
    const clock = new ManualClock();
    const s = sched(2, 'predicted-ttft', clock);
    const t = s.route(req(9, 8000)); // 2,000 cold tokens: 1,000 tokens of context on average
    const ahead = () => engineStats(s).find((e) => e.endpointId === t.decision.endpoint.id)!.aheadTokens;
    expect(ahead()).to.equal(2000);
    // Priors: 0.106 prefill + 0.112 × 1.0 context + 12.4 / 2,048 step ms per token ≈ 0.224 ms: 300 ms drain ~1,339 tokens
    // (without the context term ~2,676, the whole request, while the model predicts its prefill at ~450 ms).
    clock.advance(300);
    expect(ahead()).to.be.within(655, 667);
    clock.advance(200);
    expect(ahead()).to.equal(0);
    done(t);
  });

  it('shows its model, coefficients and ledger on the plugin states', () => {
    const s = sched(2, 'predicted-ttft');
    const t = s.route(req(9, 2000));
    const st = engineStats(s).find((e) => e.endpointId === t.decision.endpoint.id)!;
    expect(st.aheadTokens).to.equal(500);
    expect(st.coefficients.prefillMsPerToken).to.equal(0.106);
    done(t);
    expect(engineStats(s).find((e) => e.endpointId === t.decision.endpoint.id)!.aheadTokens).to.equal(0);
  });
});

describe('sticky-until-saturated preset', () => {
  it('stays on the holder until its prefill in flight exceeds τ = prefill rate × tolerated penalty, then lets go', () => {
    const s = sched(2, 'sticky-until-saturated');
    const system = text(11, 16_000); // ~4,000 tokens shared, 250 blocks
    const first = s.route(req(0, 0, { prefix: system + text(12, 100) }));
    done(first);
    const home = first.decision.endpoint.id;
    // τ = (1 / 0.106) tokens/ms × 1000 ms ≈ 9,434 tokens. Each sibling brings ~25 uncached tokens;
    // a cold 12,000-char prompt pinned to home brings 3,000.
    const held: RouteTicket[] = [];
    const sibling = (i: number) => s.route(req(0, 0, { prefix: system + text(20 + i, 100) }));
    for (let i = 0; i < 3; i++) {
      const t = sibling(i);
      expect(t.decision.endpoint.id).to.equal(home);
      held.push(t);
    }
    for (let i = 0; i < 3; i++) held.push(s.route(req(40 + i, 12_000, { subset: [home] })));
    expect(sibling(10).decision.endpoint.id, 'about 9,100 tokens in flight: still under τ').to.equal(home);
    held.push(s.route(req(50, 12_000, { subset: [home] })));
    const released = sibling(11);
    expect(released.decision.endpoint.id, 'over τ: released').to.not.equal(home);
    for (const t of held) done(t);
  });
});
