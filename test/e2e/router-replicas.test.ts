/**
 * Several router replicas behind one Envoy (test/kit/envoy-config.ts `routerAddresses`):
 * ext_proc streams spread over all of them, each replica ends the requests it routed from
 * its own access logger, and a replica SIGKILLed under bounded load costs no failed
 * request (envoy/override-host.yaml: ext_proc stream retries on connect failure, outlier
 * detection and health checks on cacheroute_extproc). Real Envoy, real router processes,
 * sim engines.
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { groupChat, mapLimit } from '../kit/chat-requests.js';
import { engineAddress, routerConfigDoc, sleep, startEngines, startEnvoy, startRouter } from '../kit/processes.js';
import type { EnvoyProcess, RouterProcess, SimEngineFleet } from '../kit/processes.js';
import { streamRequest, type StreamedRequest } from '../kit/sse-request.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { settledMetrics } from '../kit/settled-metrics.js';

const REPLICAS = 3;
const REQUESTS = 300;
const CONCURRENCY = 12;
const ENGINE_FLAGS = {
  profile: 'gpu-like',
  'time-scale': 1,
  'decode-ms-per-seq': 10,
  'step-overhead-ms': 0,
  'prefill-ms-per-token': 0.01,
} as const;

function chat(i: number): StreamedRequest {
  return groupChat(i, { tag: 'replica-group', groups: 16, systemTokens: 300, maxTokens: 16 });
}

describe('e2e: several router replicas behind Envoy', function () {
  this.timeout(120_000);
  let fleet: SimEngineFleet | undefined;
  const routers: RouterProcess[] = [];
  let envoy: EnvoyProcess | undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    fleet = await startEngines({ count: 4, flags: ENGINE_FLAGS });
    const engines = fleet.engines.map(engineAddress);
    for (let i = 0; i < REPLICAS; i++) routers.push(await startRouter({ name: `router-replica-${i}`, config: routerConfigDoc(engines) }));
    envoy = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-replicas',
      engines,
      routerAddresses: routers.map((r) => r.grpcAddress),
      failureModeAllow: true,
    });
    await envoy.waitForClusterHealth('cacheroute_extproc', true);
  });

  after(async () => {
    agent.destroy();
    await envoy?.stop();
    for (const r of routers) await r.stop();
    await fleet?.stop();
  });

  it('spreads ext_proc streams over every replica and loses no request when one is SIGKILLed', async () => {
    const victim = routers[1]!;
    const started = Date.now();
    const kill = (async () => {
      await sleep(1500);
      process.kill(victim.pid, 'SIGKILL');
      return Date.now() - started;
    })();
    const results = await mapLimit(
      Array.from({ length: REQUESTS }, (_, i) => i),
      CONCURRENCY,
      (i) => streamRequest(chat(i), { baseUrl: envoy!.url, model: 'sim-model', timeoutMs: 20_000, agent }),
    );
    const killedAtMs = await kill;
    const elapsedMs = Date.now() - started;
    expect(killedAtMs, 'the kill happened mid-load').to.be.below(elapsedMs - 500);
    const failed = results.filter((r) => r.outcome !== 'ok' || r.outputTokens !== 16);
    expect(
      failed.map((r) => `${r.outcome} ${r.status} ${r.error ?? ''}`),
      'failed requests',
    ).to.deep.equal([]);
    // Every survivor routed some of the load, and its accounting is back to zero (Envoy's
    // access log ends each request a few ms after its response).
    for (const r of [routers[0]!, routers[2]!]) {
      const m = await settledMetrics(r);
      expect(sumSamples(m, 'cacheroute_decisions_total'), r.name).to.be.above(0);
      expect(sumSamples(m, 'cacheroute_endpoint_inflight_requests'), r.name).to.equal(0);
    }
    const failOpen = (await envoy!.stat('http.ingress.ext_proc.failure_mode_allowed')) ?? 0;
    expect(failOpen, 'requests that fell back to Envoy without a router').to.be.at.most(CONCURRENCY);
  });
});
