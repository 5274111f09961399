/**
 * The router out of the response path (envoy/override-host.yaml): ext_proc sees request
 * headers and body only, responses stream from the engine through Envoy alone, and Envoy's
 * gRPC access log tells the router how each routed request ended. Real Envoy, real router
 * processes, sim engines:
 * - a router SIGKILLed while responses stream (fail-open): those responses complete intact;
 * - in-flight accounting is held while a response streams and returns exactly to zero after
 *   a success, a client abort mid-stream and an engine killed mid-stream;
 * - router down: Envoy's fallback (maglev on the session header) keeps each session on one
 *   engine and spreads sessions and session-less requests.
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { systemPrompt } from '../kit/chat-requests.js';
import { httpRequest } from '../kit/http-client.js';
import { sleep, startEnvoy, startRouter, routerConfigDoc, startEngines, engineAddress } from '../kit/processes.js';
import type { EnvoyProcess, RouterProcess, SimEngineFleet } from '../kit/processes.js';
import { streamRequest, type StreamResult, type StreamedRequest } from '../kit/sse-request.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

const SESSION_HEADER = 'x-session-id';
/** The shipped response path (the older `ext-proc` one fails the SIGKILL case: responses are cut). */
const RESPONSE_PATH: 'access-log' | 'ext-proc' = 'access-log';
/** Sim engine timing: 10 ms per decode step, so 60 output tokens stream for ~0.6 s or more. */
const ENGINE_FLAGS = {
  profile: 'gpu-like',
  'time-scale': 1,
  'decode-ms-per-seq': 10,
  'step-overhead-ms': 0,
  'prefill-ms-per-token': 0.01,
} as const;

function chat(id: string, system: string, maxTokens: number): StreamedRequest {
  return {
    api: 'chat',
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: `question ${id}` },
    ],
    maxTokens,
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function stream(envoy: EnvoyProcess, req: StreamedRequest, opts: { session?: string; signal?: AbortSignal } = {}): Promise<StreamResult> {
  return streamRequest(req, {
    baseUrl: envoy.url,
    model: 'sim-model',
    timeoutMs: 20_000,
    agent,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.session !== undefined ? { headers: { [SESSION_HEADER]: opts.session } } : {}),
  });
}

async function inflight(router: RouterProcess): Promise<number> {
  return sumSamples(await router.metrics(), 'cacheroute_endpoint_inflight_requests');
}

async function untilInflight(router: RouterProcess, want: number, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let n = await inflight(router);
  while (n !== want && Date.now() < deadline) {
    await sleep(50);
    n = await inflight(router);
  }
  return n;
}

describe('e2e: router out of the response path (access-log completion)', function () {
  this.timeout(90_000);
  let fleet: SimEngineFleet | undefined;
  let router: RouterProcess | undefined;
  let envoy: EnvoyProcess | undefined;
  let engines: string[] = [];

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    fleet = await startEngines({ count: 4, flags: ENGINE_FLAGS });
    engines = fleet.engines.map(engineAddress);
    router = await startRouter({
      name: 'router-response-path',
      config: routerConfigDoc(engines, {
        strategy: { name: 'cache-aware', plugins: { 'session-affinity-scorer': { header: SESSION_HEADER } } },
        server: { responseCompletion: RESPONSE_PATH },
      }),
    });
    envoy = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-response-path',
      engines,
      routerAddress: router.grpcAddress,
      failureModeAllow: true,
      responsePath: RESPONSE_PATH,
    });
  });

  after(async () => {
    agent.destroy();
    await envoy?.stop();
    await router?.stop();
    await fleet?.stop();
  });

  it('holds a streaming request in flight and releases it exactly when its response ends', async () => {
    const pending = stream(envoy!, chat('held', systemPrompt('held', 200), 80));
    await sleep(300);
    expect(await inflight(router!), 'counted while streaming').to.equal(1);
    const res = await pending;
    expect(res.outcome).to.equal('ok');
    expect(res.outputTokens).to.equal(80);
    expect(await untilInflight(router!, 0, 2000)).to.equal(0);
  });

  it('returns in-flight accounting to zero after a client abort mid-stream', async () => {
    const aborts = Array.from({ length: 4 }, (_, i) => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 250);
      return stream(envoy!, chat(`abort-${i}`, systemPrompt(`abort-${i}`, 200), 200), { signal: ac.signal });
    });
    await sleep(150);
    expect(await inflight(router!), 'counted before the aborts').to.equal(4);
    const results = await Promise.all(aborts);
    expect(
      results.every((r) => r.outcome !== 'ok'),
      'aborted mid-stream',
    ).to.equal(true);
    expect(await untilInflight(router!, 0)).to.equal(0);
  });

  it('returns in-flight accounting to zero after an engine is killed mid-stream', async () => {
    const system = systemPrompt('victim', 300);
    // The first request makes the router's pick for this prompt; the next ones follow it.
    const first = await stream(envoy!, chat('victim-0', system, 4));
    expect(first.outcome).to.equal('ok');
    const victim = fleet!.engines.find((e) => e.id === first.engine);
    expect(victim, `engine ${first.engine}`).to.not.equal(undefined);
    const running = Array.from({ length: 3 }, (_, i) => stream(envoy!, chat(`victim-${i + 1}`, system, 300)));
    await sleep(300);
    expect(await inflight(router!), 'counted while streaming').to.equal(3);
    process.kill(victim!.pid, 'SIGKILL');
    const results = await Promise.all(running);
    expect(results.filter((r) => r.outcome === 'ok').length, 'responses cut by the engine kill').to.be.below(3);
    expect(await untilInflight(router!, 0)).to.equal(0);
    const streams = (await httpRequest(`${router!.adminUrl}/debug/streams`)).json() as {
      pendingResponses: { pending: number; completed: number };
    };
    expect(streams.pendingResponses.pending).to.equal(0);
    expect(streams.pendingResponses.completed).to.be.at.least(1 + 4 + 4);
    engines = engines.filter((a) => a !== engineAddress(victim!));
  });

  it('completes responses already streaming when the router is SIGKILLed (fail-open)', async () => {
    const running = Array.from({ length: 6 }, (_, i) => stream(envoy!, chat(`crash-${i}`, systemPrompt(`crash-${i}`, 200), 120)));
    await sleep(400); // every response is streaming (≥ 1.2 s each)
    expect(await inflight(router!)).to.equal(6);
    process.kill(router!.pid, 'SIGKILL');
    const results = await Promise.all(running);
    for (const r of results) {
      expect(r.outcome, r.error ?? '').to.equal('ok');
      expect(r.outputTokens).to.equal(120);
    }
    await router!.exited;
  });

  it('keeps each session on one engine and spreads sessions while no router answers', async () => {
    // A fresh fleet (the one above lost an engine) behind a fresh Envoy whose router is the
    // one SIGKILLed above: nothing answers on its address.
    const fresh = await startEngines({ count: 4, flags: ENGINE_FLAGS });
    const down = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-router-down',
      engines: fresh.engines.map(engineAddress),
      routerAddress: router!.grpcAddress,
      failureModeAllow: true,
    });
    try {
      await checkSessionAffinity(down);
    } finally {
      await down.stop();
      await fresh.stop();
    }
  });
});

async function checkSessionAffinity(down: EnvoyProcess): Promise<void> {
  await down.waitForClusterHealth('cacheroute_extproc', false);
  const bySession = new Map<string, Set<string>>();
  for (let round = 0; round < 3; round++) {
    for (let s = 0; s < 8; s++) {
      const r = await stream(down, chat(`s${s}-${round}`, systemPrompt(`session-${s}-${round}`, 50), 2), { session: `session-${s}` });
      expect(r.outcome, r.error ?? '').to.equal('ok');
      const set = bySession.get(`session-${s}`) ?? new Set<string>();
      set.add(r.engine ?? '');
      bySession.set(`session-${s}`, set);
    }
  }
  for (const [session, set] of bySession) expect([...set], session).to.have.length(1);
  const sessionEngines = new Set([...bySession.values()].map((s) => [...s][0]));
  expect(sessionEngines.size, 'sessions spread').to.be.at.least(2);
  const noSession = new Set<string>();
  for (let i = 0; i < 16; i++) {
    const r = await stream(down, chat(`nosession-${i}`, systemPrompt('same', 50), 2));
    expect(r.outcome).to.equal('ok');
    noSession.add(r.engine ?? '');
  }
  expect(noSession.size, 'session-less requests spread').to.be.at.least(2);
  const allowed = (await down.stat('http.ingress.ext_proc.failure_mode_allowed')) ?? 0;
  expect(allowed).to.be.at.least(24);
}
