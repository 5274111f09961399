import { expect } from 'chai';
import { ManualClock } from '../../../src/util/clock.js';
import { EngineSignalStore } from '../../../src/endpoints/engine-metrics-store.js';
import { newMergedLoad, StalenessTracker, type StalenessMarks } from '../../../src/endpoints/staleness.js';
import type { FallbackReason } from '../../../src/endpoints/staleness.js';
import type { Endpoint } from '../../../src/core/types.js';
import { newLoadScratch } from '../../../src/endpoints/load.js';
import { seededRng } from '../../../src/util/rng.js';

function setup(staleAfterMs = 1000, frozenAfterCompletions = 3, observed = true) {
  const clock = new ManualClock(0);
  const store = new EngineSignalStore(clock);
  const hooks: Array<[string, FallbackReason]> = [];
  const t = new StalenessTracker(store, clock, {
    staleAfterMs,
    frozenAfterCompletions,
    unobservedHalfLifeMs: 1000,
    onFallback: (id, r) => hooks.push([id, r]),
  });
  // Teach the tracker whether completions are observed (outcomes with usage) on a side endpoint.
  for (let i = 0; i < 40; i++) t.onCompleted('teacher', undefined, observed);
  return { clock, store, t, hooks };
}

const total = (m: { waiting?: number; running?: number }): number => (m.waiting ?? 0) + (m.running ?? 0);

describe('load/staleness', () => {
  it('falls back to router accounting when nothing was ever scraped, and counts it', () => {
    const { t, hooks } = setup();
    const m = t.merge('a', 2);
    expect(m.fallback).to.equal('missing');
    expect(m.waiting).to.equal(undefined);
    expect(m.metricsAgeMs).to.equal(Number.POSITIVE_INFINITY);
    expect(hooks).to.deep.equal([['a', 'missing']]);
    expect(t.stats().fallbacks.missing).to.equal(1);
  });

  it('moves the scraped queue forward by routed-since minus completed-since', () => {
    const { store, t } = setup();
    t.onRouted('a');
    t.onRouted('a'); // before the scrape: included in the engine's numbers
    store.recordSuccess('a', { engine: 'vllm', waiting: 6, running: 4 });
    for (let i = 0; i < 3; i++) t.onRouted('a');
    t.onCompleted('a');
    // Own in-flight is 4 (5 routed, 1 completed); the engine had 10 incl. our 2 → 10 + 3 − 1 = 12.
    const m = t.merge('a', 4);
    expect(m.fallback).to.equal(undefined);
    expect(total(m)).to.equal(12);
    expect(m.running).to.equal(4);
    expect(m.waiting).to.equal(8);
  });

  it('never estimates below the router own in-flight count', () => {
    const { store, t } = setup();
    store.recordSuccess('a', { engine: 'vllm', waiting: 0, running: 0 });
    t.onCompleted('a');
    t.onCompleted('a');
    const m = t.merge('a', 3);
    expect(total(m)).to.equal(3);
  });

  it('fades the part the router cannot see linearly with age', () => {
    const { clock, store, t } = setup(1000);
    store.recordSuccess('a', { engine: 'vllm', waiting: 10, running: 0 }); // 10 unseen (own = 0)
    expect(total(t.merge('a', 0))).to.equal(10);
    clock.advance(250);
    expect(total(t.merge('a', 0))).to.be.closeTo(7.5, 1e-9);
    clock.advance(500);
    expect(total(t.merge('a', 0))).to.be.closeTo(2.5, 1e-9);
    expect(total(t.merge('a', 2))).to.be.closeTo(2 + 8 * 0.25, 1e-9);
  });

  it('fades KV usage towards the neutral 0 with the same trust', () => {
    const { clock, store, t } = setup(1000);
    store.recordSuccess('a', { engine: 'vllm', kvUsage: 0.8 });
    expect(t.merge('a', 0).kvUsage).to.be.closeTo(0.8, 1e-9);
    clock.advance(500);
    expect(t.merge('a', 0).kvUsage).to.be.closeTo(0.4, 1e-9);
  });

  it('adds the KV the router sent since the scrape when the engine reports its cache size', () => {
    const { store, t } = setup();
    t.onRouted('a', 'r0', 0, 5000); // before the scrape: in the engine's number already
    store.recordSuccess('a', { engine: 'vllm', kvUsage: 0.25, numBlocks: 1000, blockSizeTokens: 16 });
    store.recordSuccess('b', { engine: 'vllm', kvUsage: 0.25 }); // no cache size: nothing to add
    expect(t.merge('a', 1).kvUsage).to.equal(0.25);
    t.onRouted('a', 'r1', 0, 1600); // 1,600 uncached tokens = 10% of a 16,000-token cache
    t.onRouted('a', 'r2', 0, 0); // a full cache hit takes no new blocks
    t.onRouted('b', 'r3', 0, 1600);
    expect(t.merge('a', 3).kvUsage).to.be.closeTo(0.35, 1e-9);
    expect(t.merge('b', 1).kvUsage).to.equal(0.25);
    for (let i = 0; i < 20; i++) t.onRouted('a', `x${i}`, 0, 1600);
    expect(t.merge('a', 23).kvUsage).to.equal(1, 'capped at a full cache');
    store.recordSuccess('a', { engine: 'vllm', kvUsage: 0.5, numBlocks: 1000, blockSizeTokens: 16 });
    expect(t.merge('a', 23).kvUsage).to.equal(0.5, 'the next scrape includes them');
  });

  it('beyond staleAfterMs uses router accounting only and counts an age fallback', () => {
    const { clock, store, t, hooks } = setup(1000);
    store.recordSuccess('a', { engine: 'vllm', waiting: 10, running: 5, kvUsage: 0.9 });
    clock.advance(1000);
    expect(t.merge('a', 1).fallback).to.equal(undefined, 'exactly at the limit is still trusted');
    clock.advance(1);
    const m = t.merge('a', 1);
    expect(m.fallback).to.equal('age');
    expect(m.waiting).to.equal(undefined);
    expect(m.kvUsage).to.equal(undefined);
    expect(m.metricsAgeMs).to.equal(1001);
    expect(hooks).to.deep.equal([['a', 'age']]);
    store.recordSuccess('a', { engine: 'vllm', waiting: 1, running: 0, kvUsage: 0.2 });
    expect(t.merge('a', 1).kvUsage).to.equal(0.2, 'a fresh scrape restores trust');
  });

  it('treats repeated identical pages as frozen once enough of its requests completed, ageing them from the last change', () => {
    const { clock, store, t, hooks } = setup(1000, 3);
    store.recordSuccess('a', { engine: 'vllm', waiting: 9, running: 8, prefixCacheQueries: 500 });
    for (let step = 0; step < 12; step++) {
      clock.advance(100);
      t.onRouted('a');
      t.onCompleted('a');
      store.recordSuccess('a', { engine: 'vllm', waiting: 9, running: 8, prefixCacheQueries: 500 });
    }
    // Scraped just now, but unchanged for 1200 ms while 12 of our requests completed there.
    const m = t.merge('a', 0);
    expect(m.fallback).to.equal('frozen');
    expect(m.metricsAgeMs).to.equal(1200);
    expect(t.stats().frozenEndpoints).to.deep.equal(['a']);
    expect(hooks.at(-1)).to.deep.equal(['a', 'frozen']);
    // It thaws as soon as the numbers move.
    clock.advance(100);
    store.recordSuccess('a', { engine: 'vllm', waiting: 0, running: 1, prefixCacheQueries: 900 });
    expect(t.merge('a', 0).fallback).to.equal(undefined);
    expect(t.stats().frozenEndpoints).to.deep.equal([]);
  });

  it('does not call an idle engine frozen: unchanged numbers with no completions are fine', () => {
    const { clock, store, t } = setup(1000, 3);
    for (let i = 0; i < 30; i++) {
      store.recordSuccess('a', { engine: 'vllm', waiting: 0, running: 0 });
      clock.advance(100);
    }
    clock.advance(-100);
    const m = t.merge('a', 0);
    expect(m.fallback).to.equal(undefined);
    expect(m.metricsAgeMs).to.equal(0);
  });

  describe('when completions are not observed (tickets close at the response headers)', () => {
    it('learns the mode from the outcomes', () => {
      expect(setup(1000, 3, false).t.stats().observedCompletionShare).to.be.lessThan(0.5);
      expect(setup(1000, 3, true).t.stats().observedCompletionShare).to.be.greaterThan(0.5);
    });

    it('does not subtract early completions: scraped load and routed-since requests drain with the half-life', () => {
      const { clock, store, t } = setup(10_000, 3, false);
      store.recordSuccess('a', { engine: 'vllm', waiting: 2, running: 6 });
      t.onRouted('a', 'r1', clock.nowMs());
      t.onCompleted('a', 'r1', false); // ticket closed at the headers: still on the engine
      t.onRouted('a', 'r2', clock.nowMs());
      expect(total(t.merge('a', 0))).to.be.closeTo(8 + 2, 1e-9);
      clock.advance(1000);
      expect(total(t.merge('a', 0))).to.be.closeTo((8 + 2) / 2, 1e-9);
      clock.advance(1000);
      t.onRouted('a', 'r3', clock.nowMs());
      expect(total(t.merge('a', 0))).to.be.closeTo((8 + 2) / 4 + 1, 1e-9);
      // A new scrape includes everything routed before it.
      store.recordSuccess('a', { engine: 'vllm', waiting: 0, running: 3 });
      expect(total(t.merge('a', 0))).to.be.closeTo(3, 1e-9);
    });

    it('removes a routed-since request whose completion was observed', () => {
      const { clock, store, t } = setup(10_000, 3, false);
      store.recordSuccess('a', { engine: 'vllm', waiting: 0, running: 0 });
      t.onRouted('a', 'r1', clock.nowMs());
      t.onRouted('a', 'r2', clock.nowMs());
      t.onCompleted('a', 'r1', true);
      expect(total(t.merge('a', 0))).to.be.closeTo(1, 1e-9);
    });

    it('keeps the sum stable over many half-lives (rebasing) and bounded in size', () => {
      const { clock, store, t } = setup(1e9, 3, false);
      store.recordSuccess('a', { engine: 'vllm', waiting: 0, running: 0 });
      for (let i = 0; i < 200; i++) {
        clock.advance(1000);
        t.onRouted('a', `r${i}`, clock.nowMs());
      }
      // Geometric series 1 + 1/2 + 1/4 + ... → 2.
      expect(total(t.merge('a', 0))).to.be.closeTo(2, 1e-6);
    });
  });

  it('forgets removed endpoints and detaches from the store on close', () => {
    const { store, t } = setup();
    store.recordSuccess('a', { engine: 'vllm', waiting: 1 });
    t.onRouted('a');
    t.retain([]);
    t.close();
    t.onRouted('b');
    store.recordSuccess('b', { engine: 'vllm', waiting: 0, running: 0 });
    // Detached: the scrape did not snapshot b's counters, so the routed request still counts as "since".
    expect(total(t.merge('b', 0))).to.equal(1);
    t.onRouted('b');
    expect(total(t.merge('b', 0))).to.equal(2);
  });
});

describe('load/staleness: mergeAllInto', () => {
  it('writes exactly what mergeInto gives into every snapshot, on a seeded mix of scrapes, routing, completions, a retain and a new slot layout', () => {
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const build = (observedShare: number) => {
      const clock = new ManualClock(0);
      const store = new EngineSignalStore(clock);
      const t = new StalenessTracker(store, clock, { staleAfterMs: 800, frozenAfterCompletions: 2, unobservedHalfLifeMs: 300 });
      return { clock, store, t, observedShare };
    };
    for (const observedShare of [0, 0.9]) {
      const a = build(observedShare);
      const b = build(observedShare);
      const endpoints = ids.map((id, index) => ({ id, index }) as unknown as Endpoint);
      let slots = endpoints.map((endpoint) => ({ endpoint, load: newLoadScratch() }));
      const handles: (StalenessMarks | undefined)[] = [];
      const rng = seededRng(11 + observedShare * 10);
      let seq = 0;
      let sawFrozen = 0;
      for (let step = 0; step < 400; step++) {
        const id = ids[rng.int(ids.length)]!;
        const what = rng.int(6);
        const dt = rng.int(120);
        const signals =
          rng.next() < 0.3
            ? { engine: 'vllm' as const, waiting: 3, running: 2, kvUsage: 0.5 }
            : {
                engine: 'vllm' as const,
                ...(rng.next() < 0.8 ? { waiting: rng.int(8) } : {}),
                ...(rng.next() < 0.8 ? { running: rng.int(8) } : {}),
                ...(rng.next() < 0.7 ? { kvUsage: rng.next() } : {}),
                ...(rng.next() < 0.5 ? { numBlocks: 1000, blockSizeTokens: 16 } : {}),
              };
        const req = rng.next() < 0.8 ? `r${seq++}` : undefined;
        const observed = rng.next() < observedShare;
        const kv = rng.int(500);
        for (const x of [a, b]) {
          x.clock.advance(dt);
          if (what === 0) x.store.recordSuccess(id, signals);
          else if (what <= 2) x.t.onRouted(id, req, x.clock.nowMs(), kv);
          else if (what <= 4) x.t.onCompleted(id, `r${Math.max(0, seq - 3)}`, observed);
        }
        if (step === 150) {
          // An endpoint forgotten and back: its kept rows must not outlive its marks or its sample.
          for (const x of [a, b]) {
            x.store.retain(ids.filter((i) => i !== 'c'));
            x.t.retain(ids.filter((i) => i !== 'c'));
          }
        }
        if (step === 250) slots = [...slots].reverse();
        const now = a.clock.nowMs();
        for (const s of slots) {
          Object.assign(s.load, newLoadScratch());
          s.load.inflightRequests = s.endpoint.index % 3;
        }
        b.t.mergeAllInto(slots, handles, now);
        for (const s of slots) {
          const m = a.t.mergeInto(s.endpoint.id, s.endpoint.index % 3, newMergedLoad(), now);
          const want = { ...newLoadScratch(), inflightRequests: s.endpoint.index % 3, metricsAgeMs: m.metricsAgeMs };
          if (m.waiting !== undefined) want.waiting = m.waiting;
          if (m.running !== undefined) want.running = m.running;
          if (m.kvUsage !== undefined) want.kvUsage = m.kvUsage;
          expect(s.load, `step ${step} ${s.endpoint.id}`).to.deep.equal(want);
        }
        expect(b.t.stats()).to.deep.equal(a.t.stats());
        if (a.t.stats().frozenEndpoints.length > 0) sawFrozen++;
      }
      // Every rule ran: fallbacks by age, by missing sample and by a frozen exporter.
      const f = a.t.stats().fallbacks;
      expect(
        [f.age, f.missing, f.frozen, sawFrozen].every((x) => x > 0),
        JSON.stringify({ ...f, sawFrozen }),
      ).to.equal(true);
    }
  });
});

describe('load/staleness: decay factors', () => {
  it('decays by 2^(−age/H) to 1e-12 however long the router runs (factors kept per scrape, reference moved)', () => {
    const clock = new ManualClock(0);
    const store = new EngineSignalStore(clock);
    const H = 250;
    const t = new StalenessTracker(store, clock, { staleAfterMs: 2000, unobservedHalfLifeMs: H });
    const rng = seededRng(8);
    let checked = 0;
    // ~3 hours of virtual time: the reference moves hundreds of times.
    for (let scrape = 0; scrape < 4000; scrape++) {
      clock.advance(1000 + rng.int(4000));
      const kv = rng.next();
      const queue = 1 + rng.int(20);
      store.recordSuccess('a', { engine: 'vllm', waiting: queue, running: 0, kvUsage: kv });
      for (let k = 0; k < 3; k++) {
        clock.advance(rng.int(700));
        const age = clock.nowMs() - store.entryOf('a')!.sample!.scrapedAtMs;
        const m = t.merge('a', 0);
        const decay = 2 ** (-age / H);
        const trust = 1 - age / 2000;
        expect(m.metricsAgeMs).to.equal(age);
        expect(m.kvUsage!).to.be.closeTo(kv * Math.min(trust, decay), 1e-12);
        expect(m.waiting! + m.running!).to.be.closeTo(queue * decay, 1e-12 * queue);
        checked++;
      }
    }
    expect(checked).to.equal(12_000);
  });
});
