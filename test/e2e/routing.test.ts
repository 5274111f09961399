/**
 * Routing through a real Envoy in front of the real router and four sim engine processes,
 * for both host-pinning variants (override_host and ORIGINAL_DST): prefix affinity, spread
 * of distinct prefixes, spill of a hot prefix once the imbalance threshold is passed, and
 * that a client-supplied destination header is never honoured.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { CHAT_PATH, chatRequest, mapLimit, servedBy, systemPrompt, tally } from '../kit/chat-requests.js';
import { postJson, type HttpResult } from '../kit/http-client.js';
import { sleep, startStack, type Stack } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { settledMetrics } from '../kit/settled-metrics.js';

const VARIANTS = ['override-host', 'original-dst'] as const;

describe('e2e: routing through Envoy', function () {
  this.timeout(60_000);
  let stack: Stack;

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    this.timeout(60_000);
    stack = await startStack({
      engines: { count: 4, flags: { profile: 'gpu-like', 'time-scale': 0.05 } },
      // The imbalance escape at 8 in-flight requests (the default is 32, sized for larger
      // fleets) so a burst of 32 concurrent requests crosses it on 4 engines.
      router: {
        config: {
          strategy: {
            name: 'cache-aware',
            plugins: { 'imbalance-escape-filter': { absThreshold: 8, relThreshold: 1.5 }, 'queue-scorer': { softQueue: 8 } },
          },
        },
      },
      envoys: VARIANTS.map((variant) => ({ variant })),
    });
  });

  after(async () => {
    await stack?.stop();
  });

  // Each case starts from an idle fleet: the previous case's requests must all have ended in
  // the router's accounting (Envoy's access log ends them a few ms after their responses),
  // then one more engine scrape lands. A leak fails here instead of skewing the next case.
  beforeEach(async () => {
    const metrics = await settledMetrics(stack.router!, 5000);
    expect(sumSamples(metrics, 'cacheroute_endpoint_inflight_requests'), 'in flight before the case').to.equal(0);
    await sleep(300);
  });

  const envoyUrl = (variant: (typeof VARIANTS)[number]): string => {
    const i = VARIANTS.indexOf(variant);
    const e = stack.envoys[i];
    if (!e) throw new Error(`no envoy for ${variant}`);
    return e.url;
  };

  const setTimeScale = (timeScale: number): Promise<HttpResult[]> =>
    Promise.all(stack.engines.map((e) => postJson(`${e.url}/admin/config`, { timeScale })));

  for (const variant of VARIANTS) {
    describe(variant, () => {
      it('sends requests sharing a long prefix to one engine', async () => {
        const system = systemPrompt(`affinity-${variant}`, 600);
        const served: string[] = [];
        for (let i = 0; i < 8; i++) {
          const res = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, chatRequest(system, `question ${i}: what now?`));
          expect(res.status, res.text()).to.equal(200);
          served.push(servedBy(res));
        }
        expect(stack.engineAddresses).to.include(served[0]);
        expect(new Set(served).size, JSON.stringify(tally(served))).to.equal(1);
      });

      it('spreads distinct prefixes across all engines', async () => {
        const served = await mapLimit(
          Array.from({ length: 16 }, (_, i) => i),
          8,
          async (i) => {
            const body = chatRequest(systemPrompt(`spread-${variant}-${i}`, 300), 'hello', { maxTokens: 16, ignoreEos: true });
            const res = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, body);
            expect(res.status, res.text()).to.equal(200);
            return servedBy(res);
          },
        );
        const counts = tally(served);
        expect(counts.map(([e]) => e).sort(), JSON.stringify(counts)).to.deep.equal([...stack.engineAddresses].sort());
        // Load-aware: no engine takes more than half of 16 cold requests.
        expect(counts[0]?.[1] ?? 0, JSON.stringify(counts)).to.be.at.most(8);
      });

      it('keeps a hot prefix on one engine at low concurrency and spills it past the imbalance threshold', async function () {
        this.timeout(90_000);
        const router = stack.router;
        if (!router) throw new Error('no router');
        const hot = systemPrompt(`hot-${variant}`, 500);
        const ask = (i: number): Promise<string> =>
          postJson(`${envoyUrl(variant)}${CHAT_PATH}`, chatRequest(hot, `hot question ${i}`, { maxTokens: 32, ignoreEos: true })).then(
            (res) => {
              expect(res.status, res.text()).to.equal(200);
              return servedBy(res);
            },
          );
        await setTimeScale(1); // slow engines: requests stay in flight long enough to queue up
        try {
          // 4 in flight stays below the absolute threshold (8): affinity holds.
          const calm = await mapLimit(
            Array.from({ length: 12 }, (_, i) => i),
            4,
            ask,
          );
          expect(new Set(calm).size, JSON.stringify(tally(calm))).to.equal(1);
          const home = calm[0];

          // Decisions that deliberately left the affinity target (labelled imbalance, spill,
          // load or cold depending on which rule fired first).
          const escapes = async (): Promise<number> => {
            const text = await router.metrics();
            return sumSamples(text, 'cacheroute_decisions_total') - sumSamples(text, 'cacheroute_decisions_total', { reason: 'affinity' });
          };
          const escapesBefore = await escapes();
          // 32 in flight: the affinity engine's queue passes the threshold; others take some.
          const hotBurst = await mapLimit(
            Array.from({ length: 64 }, (_, i) => 100 + i),
            32,
            ask,
          );
          const counts = tally(hotBurst);
          expect(counts.length, JSON.stringify(counts)).to.be.at.least(2);
          expect(hotBurst).to.include(home);
          const escapesAfter = await escapes();
          expect(escapesAfter).to.be.greaterThan(escapesBefore);
        } finally {
          await setTimeScale(0.05);
        }
      });

      it('never honours a client-supplied x-gateway-destination-endpoint', async () => {
        const system = systemPrompt(`forged-${variant}`, 600);
        const first = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, chatRequest(system, 'first'));
        expect(first.status).to.equal(200);
        const home = servedBy(first);
        const others = stack.engineAddresses.filter((a) => a !== home);
        // Another engine, a list of other engines, and an address that is no engine at all
        // (with ORIGINAL_DST that would be an open proxy to any ip:port).
        const routerAdmin = stack.router ? new URL(stack.router.adminUrl).host : '127.0.0.1:9';
        const forgeries = [others[0] ?? '', others.join(','), routerAdmin];
        for (const forged of forgeries) {
          const res = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, chatRequest(system, `forged ${forged}`), {
            headers: { 'x-gateway-destination-endpoint': forged, 'x-cacheroute-destination': forged },
          });
          expect(res.status, res.text()).to.equal(200);
          expect(servedBy(res), `forged ${forged}`).to.equal(home);
        }
      });

      it("logs where a routed request's time went: the ext_proc exchange and the engine's first byte", async () => {
        const i = VARIANTS.indexOf(variant);
        const envoy = stack.envoys[i]!;
        const logged = (): string[] =>
          readFileSync(envoy.logFile, 'utf8')
            .split('\n')
            .filter((l) => l.includes('"routing_us"'));
        const before = logged().length;
        const res = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, chatRequest(systemPrompt(`timing-${variant}`, 200), 'when?'));
        expect(res.status, res.text()).to.equal(200);
        let entry: Record<string, unknown> | undefined;
        // Envoy flushes access log files every 10 s (bootstrap file_flush_interval default).
        for (let t = 0; t < 150 && entry === undefined; t++) {
          const line = logged()[before];
          if (line !== undefined) entry = JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>;
          else await sleep(100);
        }
        expect(entry, 'access log line of the request').to.not.equal(undefined);
        // Both are whole microseconds; routing includes at least one round trip to the router.
        expect(entry!['routing_us']).to.be.a('number').and.to.be.greaterThan(0);
        expect(entry!['upstream_first_byte_us']).to.be.a('number').and.to.be.greaterThan(0);
        // Envoy's ext_proc record: a request-headers call and one or more body calls.
        expect(String(entry!['ext_proc'])).to.match(/^rh:\d+:\d+,rb:\d+:\d+:\d+,/);
      });
    });
  }
});
