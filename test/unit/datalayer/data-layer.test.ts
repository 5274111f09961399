/**
 * The data layer wired through createScheduler (engine metrics + staleness in the load
 * snapshot, token load, traffic statistics) with the load-aware plugins that read it:
 * calibration, sessions, the load presets, auto and sibling bursts.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultConfig, type ConfigOverrides } from '../../../src/config/default-config.js';
import type { RouterConfig, StrategyName } from '../../../src/config/types.js';
import type { RouteTicket } from '../../../src/core/routing-service.js';
import type { RouteRequest } from '../../../src/core/types.js';
import { effectiveQueue, newLoadScratch, type LoadSnapshot } from '../../../src/endpoints/load.js';
import type { HotspotStats } from '../../../src/plugins/filter/hotspot-replication.js';
import type { AutoMode } from '../../../src/plugins/handler/auto-mode.js';
import type { CalibrationStats } from '../../../src/plugins/multi/index-calibration.js';
import { PREFIX_INDEX } from '../../../src/plugins/multi/prefix-cache-plugin.js';
import type { SessionStats } from '../../../src/plugins/scorer/session-affinity.js';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import type { Scheduler } from '../../../src/scheduling/scheduler.js';
import { createLogger } from '../../../src/logging/logger.js';
import { ManualClock, systemClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { request } from '../builders.js';

const addr = (i: number): string => `127.0.0.1:${9001 + i}`;

function cfg(n: number, over: ConfigOverrides = {}): RouterConfig {
  return defaultConfig({ endpoints: Array.from({ length: n }, (_, i) => ({ address: addr(i) })), ...over });
}

function textOf(seed: number, len: number): string {
  const rng = seededRng(seed);
  const a = 'abcdefghijklmnopqrstuvwxyz ';
  let s = '';
  for (let i = 0; i < len; i++) s += a[rng.int(a.length)];
  return s;
}

/** A snapshot as the fixed-shape scratch holds it (optional fields present, undefined when unset). */
function withEveryField(l: LoadSnapshot): LoadSnapshot {
  return { ...newLoadScratch(), ...l };
}

let seq = 0;
function req(prefix: string, over: Partial<RouteRequest> = {}): RouteRequest {
  return request({ requestId: `r${++seq}`, prefix, ...over });
}

function sched(n: number, strategy: StrategyName, over: ConfigOverrides = {}, clock = new ManualClock()): Scheduler {
  return createScheduler(cfg(n, { strategy, ...over }), { clock, rng: seededRng(3) });
}

/** What the plugins expose at /debug/plugins, by type, plus the data layer's traffic. */
function stats(s: Scheduler): {
  hotspot?: HotspotStats;
  calibration?: CalibrationStats;
  session?: SessionStats;
  auto?: { mode: AutoMode };
  traffic: ReturnType<NonNullable<Scheduler['dataLayer']>['traffic']['snapshot']>;
} {
  const by = <T>(type: string): T | undefined => s.pluginStates().find((p) => p.type === type)?.state as T | undefined;
  const out: ReturnType<typeof stats> = { traffic: s.dataLayer!.traffic.snapshot() };
  const hotspot = by<HotspotStats>('hotspot-replication-filter');
  if (hotspot) out.hotspot = hotspot;
  const calibration = by<CalibrationStats>('index-calibration');
  if (calibration) out.calibration = calibration;
  const session = by<SessionStats>('session-affinity-scorer');
  if (session) out.session = session;
  const auto = by<{ mode: AutoMode }>('auto-profile-handler');
  if (auto) out.auto = auto;
  return out;
}

const spread = (s: Scheduler, ts: readonly RouteTicket[]): number[] => {
  const c = new Array<number>(s.endpoints().length).fill(0);
  for (const t of ts) c[t.decision.endpoint.index]!++;
  return c;
};

describe('data layer and load-aware plugins through createScheduler', () => {
  describe('sibling bursts before anything is cached', () => {
    for (const strategy of ['cache-aware', 'least-request', 'power-of-two', 'bounded-load-hash', 'auto'] as const) {
      it(`${strategy}: a burst of identical cold prompts does not all land on one engine`, () => {
        const s = sched(8, strategy);
        const sys = textOf(1, 2048);
        const ts = Array.from({ length: 48 }, () => s.route(req(sys))); // none finishes
        const c = spread(s, ts);
        expect(Math.max(...c), c.join(',')).to.be.lessThan(48);
        expect(c.filter((x) => x > 0).length, c.join(',')).to.be.at.least(2);
      });
    }

    it('cache-aware with hotspot replication spreads the burst one engine at a time', () => {
      const s = sched(8, 'cache-aware', {
        strategy: { name: 'cache-aware', plugins: { 'hotspot-replication-filter': { highWater: 4, lowWater: 1 } } },
      });
      const ts = Array.from({ length: 40 }, () => s.route(req(textOf(2, 2048))));
      const c = spread(s, ts);
      expect(Math.max(...c), c.join(',')).to.be.at.most(6);
      expect(ts.some((t) => t.decision.reason === 'spill')).to.equal(true);
      expect(stats(s).hotspot?.replicated).to.equal(1);
    });
  });

  describe('engine metrics and staleness in the load snapshot', () => {
    it('moves the scraped queue forward by routed-since and falls back past staleAfterMs, counting it', () => {
      const clock = new ManualClock(0);
      const s = sched(
        2,
        'least-request',
        { engineMetrics: { enabled: true, pollIntervalMs: 100, staleAfterMs: 1000, timeoutMs: 500 } },
        clock,
      );
      const store = s.dataLayer!.store!;
      const [a] = s.endpoints();
      store.recordSuccess(a!.id, { engine: 'vllm', waiting: 5, running: 3 });
      const t1 = s.route(req('x'.repeat(100)));
      const routedTo = t1.decision.endpoint;
      const l0 = s.registry.loadOf(a!);
      expect(l0.metricsAgeMs).to.equal(0);
      expect((l0.waiting ?? 0) + (l0.running ?? 0)).to.equal(routedTo.id === a!.id ? 9 : 8);
      clock.advance(1001);
      const l1 = s.registry.loadOf(a!);
      expect(l1.waiting).to.equal(undefined);
      expect(effectiveQueue(l1, 1000)).to.equal(l1.inflightRequests);
      expect(s.dataLayer!.staleness!.stats().fallbacks.age).to.be.greaterThan(0);
    });

    it('steers least-request away from an engine whose fresh metrics show foreign load', () => {
      const s = sched(2, 'least-request', { engineMetrics: { enabled: true } });
      const [a, b] = s.endpoints();
      s.dataLayer!.store!.recordSuccess(a!.id, { engine: 'vllm', waiting: 20, running: 10 });
      s.dataLayer!.store!.recordSuccess(b!.id, { engine: 'vllm', waiting: 0, running: 0 });
      // least-request counts router in-flight only: both at 0, so it cannot see the difference...
      const lr = Array.from({ length: 20 }, () => s.route(req(textOf(seq, 300))));
      expect(new Set(lr.map((t) => t.decision.endpoint.id)).size).to.equal(2);
      // ...while power-of-two in the requests unit reads the merged effective queue.
      const p = sched(2, 'power-of-two', { engineMetrics: { enabled: true } });
      const [pa, pb] = p.endpoints();
      p.dataLayer!.store!.recordSuccess(pa!.id, { engine: 'vllm', waiting: 20, running: 10 });
      p.dataLayer!.store!.recordSuccess(pb!.id, { engine: 'vllm', waiting: 0, running: 0 });
      const pt = Array.from({ length: 20 }, () => p.route(req(textOf(seq, 300))));
      expect(pt.every((t) => t.decision.endpoint.id === pb!.id)).to.equal(true);
    });

    it('fills the batched snapshot (loadAllInto) exactly as loadOf, also for an endpoint that left and came back', () => {
      const clock = new ManualClock(0);
      // Round robin: every endpoint gets requests, so each has routed-since counts and KV added since its scrape.
      const s = sched(3, 'round-robin', { engineMetrics: { enabled: true, staleAfterMs: 1000 } }, clock);
      const store = s.dataLayer!.store!;
      const same = (step: string): void => {
        const batch = s.endpoints().map((endpoint) => ({ endpoint, load: newLoadScratch() }));
        s.registry.loadAllInto(batch, clock.nowMs());
        for (const { endpoint, load } of batch)
          expect(load, `${step} ${endpoint.id}`).to.deep.equal(withEveryField(s.registry.loadOf(endpoint)));
      };
      const kv = { engine: 'vllm', kvUsage: 0.5, numBlocks: 100, blockSizeTokens: 16 } as const;
      const [a, b, c] = s.endpoints();
      store.recordSuccess(a!.id, { ...kv, waiting: 4, running: 2 });
      store.recordSuccess(b!.id, { engine: 'vllm', waiting: 0, running: 7 });
      store.recordSuccess(c!.id, { ...kv, waiting: 9, running: 9 });
      same('scraped');
      const open = Array.from({ length: 6 }, (_, k) => s.route(req(textOf(k, 400))));
      clock.advance(300);
      same('routed');
      // c leaves with nothing in flight (its index is free again) and comes back: its old state must not return.
      for (const t of open) if (t.decision.endpoint.id === c!.id) t.finish({ aborted: false, status: 200 });
      s.registry.remove(c!.id);
      same('c gone');
      const { index: _left, ...spec } = c!;
      s.registry.add(spec);
      expect(s.registry.byId(c!.id)!.index).to.equal(c!.index);
      same('c back, no sample');
      expect(s.registry.loadOf(s.registry.byId(c!.id)!).waiting).to.equal(undefined);
      store.recordSuccess(c!.id, { ...kv, waiting: 1, running: 1 });
      same('c scraped again');
      for (const t of open) t.finish({ aborted: false, status: 200 });
      clock.advance(800);
      same('aged, finished');
      clock.advance(500);
      same('past staleAfterMs');
    });

    it('starts and stops the poller with the scheduler, leaving no timers behind', async () => {
      const server = http.createServer((_q, res) => res.end('vllm:num_requests_waiting 2\nvllm:num_requests_running 1\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      const before = process.getActiveResourcesInfo().filter((x) => x === 'Timeout').length;
      const s = createScheduler(
        defaultConfig({
          strategy: 'cache-aware',
          endpoints: [{ address: `127.0.0.1:${port}` }],
          engineMetrics: { enabled: true, pollIntervalMs: 20, staleAfterMs: 500, timeoutMs: 200, maxScrapeShare: 1 },
        }),
        { clock: systemClock, rng: seededRng(1) },
      );
      await s.start();
      await new Promise((r) => setTimeout(r, 120));
      const st = s.dataLayer!.stats();
      expect(st.scrapes?.[0]?.scrapes).to.be.greaterThan(1);
      expect(st.poller?.ticks).to.be.greaterThan(1);
      const l = s.registry.loadOf(s.endpoints()[0]!);
      expect((l.waiting ?? 0) + (l.running ?? 0)).to.be.within(1.5, 3, 'engine queue 3, faded a little by age');
      await s.stop();
      server.closeAllConnections(); // the server's own keep-alive timers go with its sockets
      await new Promise<void>((r) => server.close(() => r()));
      expect(process.getActiveResourcesInfo().filter((x) => x === 'Timeout').length).to.equal(before);
    });
  });

  describe('token load', () => {
    it('publishes pending tokens (uncached prefill + expected decode) and learns output length', () => {
      const s = sched(1, 'cache-aware', { dataLayer: { tokenLoad: { outputTokensPrior: 100 } } });
      const ep = s.endpoints()[0]!;
      const t = s.route(req('y'.repeat(4000), { maxTokens: 500 })); // 1000 prompt tokens, nothing cached
      expect(s.registry.loadOf(ep).pendingTokens).to.equal(1000 + 100);
      t.firstByte?.(); // the first streamed token: the prefill part leaves the estimate
      expect(s.registry.loadOf(ep).pendingTokens).to.equal(100);
      t.finish({ aborted: false, completionTokens: 40, promptTokens: 1000, cachedTokens: 0 });
      expect(s.registry.loadOf(ep).pendingTokens).to.equal(0);
      expect(s.dataLayer!.tokenLoad.learner.expected('m')).to.equal(40);
      const t2 = s.route(req('y'.repeat(4000)));
      // 62 of the 62 full 64-char blocks are predicted cached: prefill ≈ 1000 × (1 − 3968/4000).
      expect(s.registry.loadOf(ep).pendingTokens).to.be.closeTo(1000 * (1 - 3968 / 4000) + 40, 1e-6);
      t2.finish({ aborted: false });
    });

    it('the imbalance escape can count tokens: one huge prompt weighs more than several small ones', () => {
      // Replication off explicitly: this is about the escape's unit.
      const over = {
        strategy: {
          name: 'cache-aware' as const,
          plugins: {
            'imbalance-escape-filter': { absThreshold: 8, relThreshold: 1.5, unit: 'tokens', tokensPerRequest: 100 },
            'queue-scorer': { softQueue: 8 },
          },
        },
      };
      const s = sched(2, 'cache-aware', over);
      const sys = textOf(9, 256);
      const first = s.route(req(sys + textOf(10, 8000))); // ~2064 tokens ≈ 20 request-equivalents
      const other = s.route(req(sys + textOf(11, 100)));
      expect(other.decision.endpoint.id).to.not.equal(first.decision.endpoint.id);
      expect(other.decision.reason).to.equal('imbalance');
    });
  });

  describe('index sizing and calibration', () => {
    it('sizes the index from cache_config_info', () => {
      const s = sched(2, 'cache-aware', { engineMetrics: { enabled: true } });
      const [a] = s.endpoints();
      s.dataLayer!.store!.recordSuccess(a!.id, { engine: 'vllm', blockSizeTokens: 16, numBlocks: 1000 });
      expect(s.service(PREFIX_INDEX)!.capacity(a!.index)).to.equal((1000 * 16 * 4) / 64);
      expect(stats(s).calibration?.endpoints[0]).to.include({ sizedFromEngine: true, maxCapacityBlocks: 1000 });
    });

    it('removes unconfirmed blocks and shrinks capacity when the engine reports fewer cached tokens', () => {
      const s = sched(2, 'cache-aware', { strategy: { name: 'cache-aware', plugins: { 'prefix-cache': { indexCapacityBlocks: 5000 } } } });
      const sys = textOf(20, 2048); // 32 blocks
      const a = s.route(req(sys));
      a.finish({ aborted: false, promptTokens: 512, cachedTokens: 0 }); // a sibling has completed here
      const b = s.route(req(sys));
      expect(b.decision.endpoint.id).to.equal(a.decision.endpoint.id);
      expect(b.decision.matchedBlocks).to.equal(32);
      b.finish({ aborted: false, promptTokens: 512, cachedTokens: 64 }); // engine had 4 blocks only
      const st = stats(s).calibration!;
      expect(st.judged).to.equal(1);
      expect(st.accuracy).to.equal(0);
      expect(st.removedBlocks).to.equal(28);
      const idx = s.service(PREFIX_INDEX)!;
      expect(idx.capacity(a.decision.endpoint.index)).to.be.lessThan(5000);
      const c = s.route(req(sys));
      expect(c.decision.matchedBlocks).to.equal(4, 'only the confirmed blocks are still predicted');
      c.finish({ aborted: false, promptTokens: 512, cachedTokens: 64 });
      expect(stats(s).calibration!.accuracy).to.equal(0.5);
    });

    it('does not judge a hit predicted from a sibling that had not finished yet', () => {
      const s = sched(2, 'cache-aware');
      const sys = textOf(21, 1024);
      const a = s.route(req(sys));
      const b = s.route(req(sys)); // a still in flight: b's predicted hit is speculative
      a.finish({ aborted: false, promptTokens: 256, cachedTokens: 0 });
      b.finish({ aborted: false, promptTokens: 256, cachedTokens: 0 });
      const st = stats(s).calibration!;
      expect(st.judged).to.equal(0);
      expect(st.speculative).to.equal(1);
      expect(st.removedBlocks).to.equal(0);
    });
  });

  describe('session affinity', () => {
    it('keeps a session on its engine until that engine is overloaded', () => {
      const s = sched(3, 'cache-aware', {
        strategy: {
          name: 'cache-aware',
          plugins: { 'session-affinity-scorer': { header: 'X-Session-Id', overloadAbs: 3, overloadRel: 1.5 } },
        },
      });
      const first = s.route(req(textOf(30, 300), { headers: new Map([['x-session-id', 'alice']]) }));
      const home = first.decision.endpoint;
      first.finish({ aborted: false });
      for (let k = 0; k < 3; k++) {
        const t = s.route(req(textOf(31 + k, 300), { headers: new Map([['x-session-id', 'alice']]) })); // unrelated prompts
        expect(t.decision.endpoint.id).to.equal(home.id);
        t.finish({ aborted: false });
      }
      const leases = Array.from({ length: 5 }, () => s.registry.inflight.acquire(home.index, 10));
      const moved = s.route(req(textOf(40, 300), { headers: new Map([['x-session-id', 'alice']]) }));
      expect(moved.decision.endpoint.id).to.not.equal(home.id);
      expect(moved.decision.notes).to.include('session yielded to load');
      for (const l of leases) l.release();
      expect(stats(s).session?.yielded).to.equal(1);
    });
  });

  describe('prefill queue', () => {
    it('a ticket reports its first byte once; the load snapshot and the prefill queue signal follow', () => {
      const s = sched(2, 'cache-aware', {
        engineMetrics: { enabled: false },
        strategy: { name: 'cache-aware', weights: { 'kv-usage-scorer': 0 }, plugins: { 'queue-scorer': { signal: 'prefill' } } },
      });
      const [e0, e1] = s.endpoints();
      // Three requests decoding on one engine, one still waiting for its first byte on the other.
      const busy = [0, 1, 2].map((i) => s.route(req(textOf(8000 + i, 900))));
      const onE0 = busy.filter((t) => t.decision.endpoint.index === 0);
      const onE1 = busy.filter((t) => t.decision.endpoint.index === 1);
      const [decoding, prefilling] = onE0.length >= 2 ? [onE0, onE1] : [onE1, onE0];
      for (const t of decoding) {
        t.firstByte?.();
        t.firstByte?.();
      }
      const loaded = decoding[0]!.decision.endpoint;
      expect(s.registry.loadOf(loaded)).to.include({ inflightRequests: decoding.length, prefillingRequests: 0 });
      const other = loaded === e0 ? e1! : e0!;
      expect(s.registry.loadOf(other)).to.include({ inflightRequests: prefilling.length, prefillingRequests: prefilling.length });
      // A cold request goes where nothing waits for prefill, though more requests are in flight there.
      const cold = s.route(req(textOf(8100, 900)));
      expect(cold.decision.endpoint).to.equal(loaded);
      for (const t of [...busy, cold]) t.finish({ aborted: false });
      cold.firstByte?.();
      expect(s.registry.loadOf(loaded)).to.include({ inflightRequests: 0, prefillingRequests: 0 });
    });
  });

  describe('auto', () => {
    function drive(s: Scheduler, clock: ManualClock, reuse: boolean, n: number): void {
      for (let i = 0; i < n; i++) {
        clock.advance(20);
        const p = reuse ? textOf(50 + (i % 3), 1024) + textOf(1000 + i, 200) : textOf(5000 + seq, 1200);
        s.route(req(p)).finish({ aborted: false });
      }
    }

    it('learns per request before the first reading: cold requests rotate, warm ones follow their prefix', () => {
      const clock = new ManualClock(0);
      const s = createScheduler(cfg(4, { strategy: { name: 'auto', plugins: { auto: { minRequests: 1000 } } } }), {
        clock,
        rng: seededRng(4),
      });
      const cold: number[] = [];
      for (let i = 0; i < 8; i++) {
        clock.advance(20);
        const t = s.route(req(textOf(7000 + i, 1200)));
        cold.push(t.decision.endpoint.index);
        expect(t.decision.notes).to.include('auto: cold request balanced');
        t.finish({ aborted: false });
      }
      expect(cold).to.deep.equal([0, 1, 2, 3, 0, 1, 2, 3], 'no reuse: exactly round-robin, as the load mode');
      // A prompt whose first 1,200 characters one engine holds (the third cold one) goes there.
      const warm = s.route(req(textOf(7002, 1200) + textOf(99, 200)));
      expect(warm.decision.endpoint.index).to.equal(2);
      expect(warm.decision.reason).to.equal('affinity');
      expect(warm.decision.notes).to.not.include('auto: cold request balanced');
      warm.finish({ aborted: false });
      // A short shared head (under learningMinMatch of the prompt) is not enough evidence.
      const weak = s.route(req(textOf(7002, 128) + textOf(98, 1600)));
      expect(weak.decision.notes).to.include('auto: cold request balanced');
      expect(stats(s).auto?.mode).to.equal('learning');
    });

    it('starts learning, moves to cache-aware on high reuse with many engines, and back on low reuse; logs switches', () => {
      const clock = new ManualClock(0);
      const lines: string[] = [];
      const logger = createLogger({ level: 'info', write: (l) => lines.push(l) });
      const s = createScheduler(
        cfg(8, {
          strategy: { name: 'auto', plugins: { auto: { minDwellMs: 2000, minRequests: 20 } } },
          dataLayer: { traffic: { windowMs: 10_000 } },
        }),
        { clock, rng: seededRng(4), logger },
      );
      drive(s, clock, true, 100);
      expect(stats(s).auto?.mode).to.equal('cache-aware');
      expect(stats(s).traffic!.reuseRate).to.be.greaterThan(0.9);
      drive(s, clock, false, 800); // 16 s of unique prompts: the window forgets the reuse
      expect(stats(s).auto?.mode).to.equal('load');
      const switches = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'auto strategy switch');
      expect(switches.map((l) => [l.from, l.to])).to.deep.equal([
        ['learning', 'cache-aware'],
        ['cache-aware', 'load'],
      ]);
    });

    it('load.auto.initial: load brings back the plain load-balancing start', () => {
      const clock = new ManualClock(0);
      const s = createScheduler(cfg(4, { strategy: { name: 'auto', plugins: { auto: { minRequests: 1000, initial: 'load' } } } }), {
        clock,
        rng: seededRng(4),
      });
      const first = s.route(req(textOf(7100, 1200)));
      first.finish({ aborted: false });
      const again = s.route(req(textOf(7100, 1200)));
      expect(stats(s).auto?.mode).to.equal('load');
      expect(again.decision.endpoint.index).to.not.equal(first.decision.endpoint.index, 'round-robin ignores the cached prefix');
    });

    it('uses affinity on a small pool', () => {
      const clock = new ManualClock(0);
      const s = createScheduler(cfg(3, { strategy: { name: 'auto', plugins: { auto: { minRequests: 20 } } } }), {
        clock,
        rng: seededRng(4),
      });
      drive(s, clock, true, 60);
      expect(stats(s).auto?.mode).to.equal('affinity');
      const t = s.route(req(textOf(50, 1024) + 'tail'));
      expect(t.decision.reason).to.equal('affinity');
      expect(s.dataLayer!.traffic.snapshot().requests).to.equal(61);
    });
  });
});
