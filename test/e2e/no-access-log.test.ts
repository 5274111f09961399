/**
 * Completion accounting when the gateway sends the router no access log (a gateway that
 * manages Envoy for the user): real Envoy (the canonical override-host config without its
 * gRPC access logger), real router with its default `access-log` completion, sim engines.
 * The router waits ACCESS_LOG_WAIT_MS once for a log that never comes, then:
 * - Envoy sends the router the response (processingMode.response): in-flight is exact while
 *   responses stream and back to exactly 0 the moment they end, client aborts included;
 * - Envoy sends the request only: in-flight returns to exactly 0 when the requests were
 *   routed, instead of after the route timeout.
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { ACCESS_LOG_WAIT_MS } from '../../src/extproc/pending-responses.js';
import { systemPrompt } from '../kit/chat-requests.js';
import { httpRequest } from '../kit/http-client.js';
import { engineAddress, routerConfigDoc, sleep, startEngines, startEnvoy, startRouter } from '../kit/processes.js';
import type { EnvoyProcess, RouterProcess, SimEngineFleet } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { type StreamResult, type StreamedRequest, streamRequest } from '../kit/sse-request.js';

const ENGINE_FLAGS = {
  profile: 'gpu-like',
  'time-scale': 1,
  'decode-ms-per-seq': 10,
  'step-overhead-ms': 0,
  'prefill-ms-per-token': 0.01,
} as const;
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function chat(id: string, maxTokens: number): StreamedRequest {
  return {
    api: 'chat',
    messages: [
      { role: 'system', content: systemPrompt(`sys-${id}`, 200) },
      { role: 'user', content: `question ${id}` },
    ],
    maxTokens,
  };
}

function stream(envoy: EnvoyProcess, req: StreamedRequest, signal?: AbortSignal): Promise<StreamResult> {
  return streamRequest(req, { baseUrl: envoy.url, model: 'sim-model', timeoutMs: 20_000, agent, ...(signal ? { signal } : {}) });
}

async function inflight(router: RouterProcess): Promise<number> {
  return sumSamples(await router.metrics(), 'cacheroute_endpoint_inflight_requests');
}

async function untilInflight(router: RouterProcess, want: number, timeoutMs: number): Promise<{ n: number; ms: number }> {
  const started = Date.now();
  let n = await inflight(router);
  while (n !== want && Date.now() - started < timeoutMs) {
    await sleep(50);
    n = await inflight(router);
  }
  return { n, ms: Date.now() - started };
}

async function pendingOf(router: RouterProcess): Promise<Record<string, unknown>> {
  return ((await httpRequest(`${router.adminUrl}/debug/streams`)).json() as { pendingResponses: Record<string, unknown> }).pendingResponses;
}

describe('e2e: no access log from the gateway (completion falls back)', function () {
  this.timeout(120_000);
  let fleet: SimEngineFleet | undefined;
  const routers: RouterProcess[] = [];
  const envoys: EnvoyProcess[] = [];

  async function stack(name: string, responsePath: 'ext-proc' | 'none'): Promise<{ router: RouterProcess; envoy: EnvoyProcess }> {
    const engines = fleet!.engines.map(engineAddress);
    const router = await startRouter({ name: `router-${name}`, config: routerConfigDoc(engines) });
    routers.push(router);
    const envoy = await startEnvoy({
      variant: 'override-host',
      name: `envoy-${name}`,
      engines,
      routerAddress: router.grpcAddress,
      responsePath,
    });
    envoys.push(envoy);
    return { router, envoy };
  }

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    fleet = await startEngines({ count: 2, flags: ENGINE_FLAGS });
  });

  after(async () => {
    agent.destroy();
    for (const e of envoys) await e.stop();
    for (const r of routers) await r.stop();
    await fleet?.stop();
  });

  it('response through ext_proc, no access log: in-flight exact while streaming and 0 right after a run with aborts', async () => {
    const { router, envoy } = await stack('no-log-response', 'ext-proc');
    const probe = await stream(envoy, chat('probe', 4));
    expect(probe.outcome).to.equal('ok');
    const waited = await untilInflight(router, 0, ACCESS_LOG_WAIT_MS + 5000);
    expect(waited.n, `0 after waiting for a log that never came (${waited.ms} ms)`).to.equal(0);
    const held = stream(envoy, chat('held', 80));
    await sleep(300);
    expect(await inflight(router), 'counted while streaming').to.equal(1);
    expect((await held).outcome).to.equal('ok');
    expect((await untilInflight(router, 0, 1000)).n, 'released when the response ended').to.equal(0);
    const runs = Array.from({ length: 8 }, (_, i) => {
      const ac = i % 4 === 0 ? new AbortController() : undefined;
      if (ac) setTimeout(() => ac.abort(), 250);
      return stream(envoy, chat(`run-${i}`, 60), ac?.signal);
    });
    await sleep(150);
    expect(await inflight(router), 'all counted mid-run').to.equal(8);
    const results = await Promise.all(runs);
    expect(results.filter((r) => r.outcome === 'ok').length).to.equal(6);
    expect((await untilInflight(router, 0, 1000)).n, 'exactly 0 within 1 s of the run').to.equal(0);
    expect(await pendingOf(router)).to.deep.include({ pending: 0, accessLog: 'absent', unconfirmed: 1, byStream: 9 });
  });

  it('request only, no access log: the log is taken as absent and in-flight returns to 0 without the route timeout', async () => {
    const { router, envoy } = await stack('no-log-request-only', 'none');
    const first = await Promise.all(Array.from({ length: 6 }, (_, i) => stream(envoy, chat(`first-${i}`, 20))));
    expect(first.every((r) => r.outcome === 'ok')).to.equal(true);
    const waited = await untilInflight(router, 0, ACCESS_LOG_WAIT_MS + 5000);
    expect(waited.n, `0 after waiting for a log that never came (${waited.ms} ms)`).to.equal(0);
    expect(await pendingOf(router)).to.deep.include({ pending: 0, accessLog: 'absent', unconfirmed: 6 });
    // Now known absent: later requests end with their streams.
    const later = await Promise.all(Array.from({ length: 6 }, (_, i) => stream(envoy, chat(`later-${i}`, 20))));
    expect(later.every((r) => r.outcome === 'ok')).to.equal(true);
    expect((await untilInflight(router, 0, 1000)).n, 'exactly 0 within 1 s of the second run').to.equal(0);
  });
});
