/**
 * A real Envoy Gateway in front of cacheroute. Envoy Gateway v1.9.1 standalone (file provider,
 * host infrastructure) reads the project's shipped resources, deploy/envoy-gateway/gateway.yaml
 * and cacheroute-policies.yaml, and programs its own Envoy (this checkout's 1.40); the router and
 * four simulated engines run on loopback. The only changes to the shipped objects are the
 * environment's bindings (`standaloneBindings` below): Services become Backends with the test's
 * loopback addresses, the listener port is a free one, and the EnvoyProxy names the local Envoy.
 *
 * Asserts, end to end through the gateway: requests are routed by cacheroute (the decision is on
 * /debug/decisions, and the access log's outcome names the engine that served); a shared prefix
 * stays on one engine while distinct ones spread; in-flight accounting returns to exactly 0 after
 * a concurrent streaming run (completions from the EnvoyProxy's ALS sink, not a timeout); a
 * destination header from the client is ignored; a dead engine that the router still picks (its
 * health is off here) is retried by the gateway onto the router's fallbacks; a router killed
 * mid-run fails requests closed (the shipped failOpen: false) without hanging them, and routing
 * resumes when it is back.
 */
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import { chatRequest, mapLimit, servedBy, systemPrompt } from '../kit/chat-requests.js';
import { startEnvoyGateway, GATEWAY_ENVOY_VERSION, type EnvoyGateway } from '../kit/envoy-gateway.js';
import { httpRequest, postJson, type HttpResult } from '../kit/http-client.js';
import {
  engineAddress,
  freePort,
  routerConfigDoc,
  sleep,
  startEngines,
  startRouter,
  type RouterProcess,
  type SimEngineFleet,
} from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { REPO_ROOT } from '../kit/repo-paths.js';
import { streamRequest } from '../kit/sse-request.js';
import { envoyBinary, envoyGatewayBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

type Obj = Record<string, unknown>;
const SHIPPED = ['deploy/envoy-gateway/gateway.yaml', 'deploy/envoy-gateway/cacheroute-policies.yaml'];
const DESTINATION_HEADER = 'x-gateway-destination-endpoint';
const CHAT = '/v1/chat/completions';

function shippedDocs(): Obj[] {
  return SHIPPED.flatMap((f) => parseAllDocuments(readFileSync(join(REPO_ROOT, f), 'utf8')).map((d) => d.toJS() as Obj));
}

interface Bindings {
  readonly listenerPort: number;
  /** Service name -> the loopback `ip:port`s behind it. */
  readonly services: Readonly<Record<string, readonly string[]>>;
}

function hostPort(a: string): { address: string; port: number } {
  const i = a.lastIndexOf(':');
  return { address: a.slice(0, i), port: Number(a.slice(i + 1)) };
}

/**
 * The shipped objects as Envoy Gateway standalone needs them here. A Service backendRef (no
 * group/kind) becomes a Backend of the same name holding that Service's loopback endpoints; the
 * Gateway listener gets the free port; the EnvoyProxy gets the Host provider with the local
 * Envoy's version. Nothing else changes.
 */
function standaloneBindings(docs: readonly Obj[], b: Bindings): Obj[] {
  const used = new Set<string>();
  const rebind = (ref: Obj): Obj => {
    if (ref['group'] !== undefined || ref['kind'] !== undefined) return ref;
    const name = String(ref['name']);
    if (b.services[name] === undefined) throw new Error(`no binding for Service ${name}`);
    used.add(name);
    return { group: 'gateway.envoyproxy.io', kind: 'Backend', name };
  };
  const walk = (v: unknown, key?: string): unknown => {
    if (Array.isArray(v)) return key === 'backendRefs' ? v.map((r) => rebind(r as Obj)) : v.map((x) => walk(x));
    if (typeof v !== 'object' || v === null) return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
  };
  const out = docs.map((d) => {
    const doc = walk(d) as Obj;
    const spec = doc['spec'] as Obj;
    if (doc['kind'] === 'Gateway') for (const l of spec['listeners'] as Obj[]) l['port'] = b.listenerPort;
    if (doc['kind'] === 'EnvoyProxy') spec['provider'] = { type: 'Host', host: { envoyVersion: GATEWAY_ENVOY_VERSION } };
    return doc;
  });
  const route = out.find((d) => d['kind'] === 'HTTPRoute');
  if (route === undefined) throw new Error('no HTTPRoute in the shipped resources');
  const namespace = (route['metadata'] as Obj)['namespace'];
  for (const name of used) {
    out.push({
      apiVersion: 'gateway.envoyproxy.io/v1alpha1',
      kind: 'Backend',
      metadata: { name, namespace },
      spec: { endpoints: (b.services[name] ?? []).map((a) => ({ ip: hostPort(a) })) },
    });
  }
  return out;
}

/** Until the gateway routes a chat request (the listener is up before every xDS resource has arrived). */
async function untilRouting(gw: EnvoyGateway, agent: Agent): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    const body = chatRequest(systemPrompt('warm-up', 50), 'hello', { maxTokens: 4 });
    const r = await postJson(`${gw.url}${CHAT}`, body, { timeoutMs: 10_000, agent }).catch(() => undefined);
    if (r?.status === 200) return;
    if (Date.now() > until) throw new Error(`the gateway never routed (last status ${r?.status}); log ${gw.logFile}\n${gw.tail(40)}`);
    await sleep(250);
  }
}

/** Teardown, gateway first (its Envoy holds connections to the router and engines). */
async function stopAll(agent: Agent, gw?: EnvoyGateway, router?: RouterProcess, fleet?: SimEngineFleet): Promise<void> {
  agent.destroy();
  await gw?.stop();
  await router?.stop();
  await fleet?.stop();
}

interface Decision {
  readonly requestId: string;
  readonly endpoint: string;
  readonly fallbacks: readonly string[];
  outcome?: { readonly status?: number; readonly servedBy?: string };
}

interface PendingStats {
  readonly completed: number;
  readonly byStream: number;
  readonly expired: number;
  readonly orphaned: number;
}
interface StreamsDebug {
  readonly pendingResponses: PendingStats & { readonly accessLog: string };
  readonly accessLog: { readonly entries: number };
}

describe('e2e: Envoy Gateway standalone in front of cacheroute', function () {
  this.timeout(240_000);
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  let fleet: SimEngineFleet | undefined;
  let router: RouterProcess | undefined;
  let gw: EnvoyGateway | undefined;
  let engines: string[] = [];
  let routerConfig: Obj = {};

  const chat = (system: string, user: string, headers: Record<string, string> = {}): Promise<HttpResult> =>
    postJson(`${gw!.url}${CHAT}`, chatRequest(system, user, { maxTokens: 4 }), { timeoutMs: 10_000, agent, headers });
  const decisions = async (): Promise<Decision[]> =>
    ((await httpRequest(`${router!.adminUrl}/debug/decisions?n=256`, { timeoutMs: 2000 })).json() as { decisions: Decision[] }).decisions;
  const streamsDebug = async (): Promise<StreamsDebug> =>
    (await httpRequest(`${router!.adminUrl}/debug/streams`, { timeoutMs: 2000 })).json() as StreamsDebug;
  const inflight = async (): Promise<number> => sumSamples(await router!.metrics(), 'cacheroute_endpoint_inflight_requests');
  const startTheRouter = async (): Promise<void> => {
    router = await startRouter({ name: 'router-envoy-gateway', config: routerConfig });
  };

  before(async function () {
    requireComponents(this, envoyGatewayBinary(), envoyBinary(), routerBuild(), simEngineBuild());
    // 5 ms per decode step: a 60-token stream lasts ~0.3 s, long enough to be seen in flight.
    fleet = await startEngines({
      count: 4,
      flags: { profile: 'gpu-like', 'time-scale': 1, 'decode-ms-per-seq': 5, 'step-overhead-ms': 0 },
    });
    engines = fleet.engines.map(engineAddress);
    const [grpcPort, adminPort, listenerPort] = [await freePort(), await freePort(), await freePort()];
    routerConfig = routerConfigDoc(engines, {
      server: {
        grpcAddress: `127.0.0.1:${grpcPort}`,
        adminAddress: `127.0.0.1:${adminPort}`,
        responseCompletion: 'access-log',
        // Far beyond the test: in-flight that returns to 0 was completed by the access log.
        responseIdleTimeoutMs: 600_000,
      },
      // The router learns no engine health here (no scrapes, no checks, no ejection), so a dead
      // engine stays its pick and is left to the gateway's retry onto the router's fallbacks.
      engineMetrics: { enabled: false },
      health: { enabled: false },
      telemetry: { recentDecisions: 256 },
    });
    await startTheRouter();
    const resources = standaloneBindings(shippedDocs(), {
      listenerPort,
      services: { vllm: engines, cacheroute: [`127.0.0.1:${grpcPort}`] },
    });
    gw = await startEnvoyGateway({ resources, listenerPort, name: 'envoy-gateway' });
    await untilRouting(gw, agent);
  });

  after(() => stopAll(agent, gw, router, fleet));

  it('routes through cacheroute: the decision is on /debug/decisions and the access log names the serving engine', async () => {
    const before = new Set((await decisions()).map((d) => d.requestId));
    const res = await chat(systemPrompt('routed', 200), 'which engine?');
    expect(res.status).to.equal(200);
    const engine = servedBy(res);
    expect(engines).to.include(engine);
    const fresh = (await decisions()).filter((d) => !before.has(d.requestId));
    expect(fresh, 'one new decision').to.have.length(1);
    expect(fresh[0]!.endpoint).to.equal(engine);
    expect(fresh[0]!.fallbacks.length, 'fallbacks offered for retries').to.be.greaterThan(0);
    // The outcome arrives with the gateway's access-log entry for this request.
    const until = Date.now() + 3000;
    let outcome = fresh[0]!.outcome;
    while (outcome === undefined && Date.now() < until) {
      await sleep(50);
      outcome = (await decisions()).find((d) => d.requestId === fresh[0]!.requestId)?.outcome;
    }
    expect(outcome, 'outcome from the access log').to.deep.include({ status: 200 });
  });

  it('keeps a shared prefix on one engine and spreads distinct prefixes', async () => {
    const shared = systemPrompt('shared-prefix', 400);
    const same: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await chat(shared, `question ${i}`);
      expect(r.status).to.equal(200);
      same.push(servedBy(r));
    }
    expect(new Set(same), `shared prefix served by ${same.join(' ')}`).to.have.length(1);
    const distinct = await mapLimit(
      Array.from({ length: 12 }, (_, i) => i),
      4,
      async (i) => servedBy(await chat(systemPrompt(`distinct-${i}`, 400), 'q')),
    );
    expect(new Set(distinct).size, `distinct prefixes served by ${distinct.join(' ')}`).to.be.greaterThan(1);
  });

  it('returns in-flight accounting to exactly 0 after a concurrent streaming run', async () => {
    const before = await streamsDebug();
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await inflight());
        await sleep(40);
      }
    })();
    const results = await mapLimit(
      Array.from({ length: 40 }, (_, i) => i),
      8,
      (i) =>
        streamRequest(
          {
            api: 'chat',
            messages: [
              { role: 'system', content: systemPrompt(`stream-${i % 5}`, 300) },
              { role: 'user', content: `stream ${i}` },
            ],
            maxTokens: 60,
          },
          { baseUrl: gw!.url, model: 'sim-model', timeoutMs: 20_000, agent },
        ),
    );
    sampling = false;
    await sampler;
    expect(results.map((r) => r.outcome)).to.deep.equal(results.map(() => 'ok'));
    expect(peak, 'requests were counted in flight while streaming').to.be.greaterThan(0);
    const until = Date.now() + 3000;
    let n = await inflight();
    while (n !== 0 && Date.now() < until) {
      await sleep(50);
      n = await inflight();
    }
    expect(n, 'in flight after the run').to.equal(0);
    // Every ticket of the run ended from the gateway's access log: none by its stream, none
    // expired. The completion mode it ends in is `present` (the shipped EnvoyProxy's ALS sink
    // reaches the router), not the no-log fallback of docs/envoy.md.
    const after = await streamsDebug();
    const delta = (k: keyof PendingStats): number => after.pendingResponses[k] - before.pendingResponses[k];
    expect(delta('completed'), 'tickets completed').to.be.at.least(40);
    expect(delta('byStream'), 'tickets ended by their stream').to.equal(0);
    expect(delta('expired') + delta('orphaned'), 'tickets expired or orphaned').to.equal(0);
    expect(after.pendingResponses.accessLog, '/debug/streams completion mode').to.equal('present');
    expect(sumSamples(await router!.metrics(), 'cacheroute_access_log_state', { state: 'present' }), 'access log state').to.equal(1);
  });

  it('ignores a destination header sent by the client', async () => {
    // A routed request: the router's pick wins over the client's.
    const system = systemPrompt('spoof', 300);
    const pinned = servedBy(await chat(system, 'first'));
    const other = engines.find((e) => e !== pinned)!;
    const spoofed = await chat(system, 'second', { [DESTINATION_HEADER]: other });
    expect(spoofed.status).to.equal(200);
    expect(servedBy(spoofed), 'served by the router pick, not the spoofed engine').to.equal(pinned);
    // A request the router passes through without a decision (GET): the gateway strips the header
    // before any filter runs, so its load balancer spreads them.
    const served: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await httpRequest(`${gw!.url}/v1/models`, { timeoutMs: 5000, agent, headers: { [DESTINATION_HEADER]: other } });
      expect(r.status).to.equal(200);
      served.push(servedBy(r));
    }
    expect(
      served.filter((e) => e !== other),
      `passthrough served by ${served.join(' ')}`,
    ).to.not.have.length(0);
  });

  it("retries a dead engine's requests onto the fallbacks the router offered", async () => {
    const system = systemPrompt('dead-engine', 300);
    const pinned = servedBy(await chat(system, 'before'));
    const victim = fleet!.engines.find((e) => engineAddress(e) === pinned)!;
    const seen = new Set((await decisions()).map((d) => d.requestId));
    process.kill(victim.pid, 'SIGKILL');
    await sleep(200);
    const after: HttpResult[] = [];
    for (let i = 0; i < 6; i++) after.push(await chat(system, `after ${i}`));
    expect(after.map((r) => r.status)).to.deep.equal(after.map(() => 200));
    for (const r of after) expect(servedBy(r), 'not served by the dead engine').to.not.equal(pinned);
    // Router health is off in this suite, so the router still picks the dead engine: the
    // gateway's retry (connect-failure) goes to the next host of the router's header list.
    const recent = (await decisions()).filter((d) => !seen.has(d.requestId)).reverse();
    expect(recent, 'decisions after the kill').to.have.length(6);
    recent.forEach((d, i) => {
      expect(d.endpoint, 'the router picked the dead engine').to.equal(pinned);
      expect(d.fallbacks, 'served by a fallback the router offered').to.include(servedBy(after[i]!));
    });
  });

  it('fails requests closed while the router is down (failOpen: false), without hanging, and recovers', async () => {
    // `down`: sent and answered while the router was dead (requests across a switch are left out).
    const statuses: { status: number; engine: string; ms: number; down: boolean }[] = [];
    let routerUp = true;
    const deadline = Date.now() + 8000;
    const load = (async () => {
      for (let i = 0; i < 200 && Date.now() < deadline; i++) {
        const sentDown = !routerUp;
        const r = await chat(systemPrompt(`kill-${i % 3}`, 200), `kill ${i}`).catch(() => undefined);
        statuses.push({ status: r?.status ?? 0, engine: r ? servedBy(r) : '', ms: r?.totalMs ?? Number.NaN, down: sentDown && !routerUp });
        await sleep(20);
      }
    })();
    await sleep(1500);
    await router!.stop({ signal: 'SIGKILL' });
    routerUp = false;
    await sleep(2500);
    await startTheRouter();
    routerUp = true;
    await load;
    const down = statuses.filter((s) => s.down);
    expect(down.length, 'requests sent while the router was down').to.be.greaterThan(3);
    expect(
      down.filter((s) => s.status === 200),
      'none served with the router down (fail closed)',
    ).to.have.length(0);
    for (const s of down) {
      expect(s.status, 'a gateway error, not a timeout').to.be.within(500, 599);
      expect(s.ms, 'answered at once').to.be.below(3000);
    }
    // After the restart on the same address, the gateway's Envoy reconnects and routes again.
    const until = Date.now() + 15_000;
    let ok: HttpResult | undefined;
    while (Date.now() < until) {
      ok = await chat(systemPrompt('after-restart', 200), 'back?').catch(() => undefined);
      if (ok?.status === 200) break;
      await sleep(200);
    }
    expect(ok?.status, 'routing resumes after the router restarts').to.equal(200);
    expect((await decisions()).length, 'decisions by the new router').to.be.greaterThan(0);
  });
});

/**
 * Completion accounting and first-token timing under Envoy Gateway for the TTFT model. Envoy
 * Gateway's ALS sink has no custom tags, so the shipped policies alone complete every request
 * from the access log but give it no first-token time: the router must see that (untimed
 * counts, one warning) instead of silently learning nothing. The shipped EnvoyPatchPolicy
 * (deploy/envoy-gateway/first-body-timing.yaml), added to the running gateway, puts the tag on
 * the same logger, and from then on every streamed request is learned from its entry.
 */
describe('e2e: Envoy Gateway standalone: first-token timing for the TTFT model', function () {
  this.timeout(240_000);
  const TIMING = 'deploy/envoy-gateway/first-body-timing.yaml';
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let fleet: SimEngineFleet | undefined;
  let router: RouterProcess | undefined;
  let gw: EnvoyGateway | undefined;
  let resources: Obj[] = [];

  /** One streamed chat; `via` a fresh agent after the listener changed (its old connections drain). */
  const stream = async (tag: string, i: number, opts: { via?: Agent; tolerate?: boolean } = {}): Promise<void> => {
    const r = await streamRequest(
      {
        api: 'chat',
        messages: [
          { role: 'system', content: systemPrompt(`ttft-eg-${tag}-${i}`, 400 + (i % 4) * 300) },
          { role: 'user', content: `question ${i}` },
        ],
        maxTokens: 4,
      },
      { baseUrl: gw!.url, model: 'sim-model', timeoutMs: 20_000, agent: opts.via ?? agent },
    );
    if (opts.tolerate !== true) expect(r.outcome, r.error ?? '').to.equal('ok');
  };
  const metric = async (name: string): Promise<number> => sumSamples(await router!.metrics(), name);
  /** Waits (bounded, 3 s) until the metric equals `want`; returns its last value. */
  const settle = async (name: string, want: number): Promise<number> => {
    let v = await metric(name);
    for (let t = 0; t < 60 && v !== want; t++) {
      await sleep(50);
      v = await metric(name);
    }
    return v;
  };

  before(async function () {
    requireComponents(this, envoyGatewayBinary(), envoyBinary(), routerBuild(), simEngineBuild());
    // Prefill ~3x slower than the model's priors (0.106 ms/token), as in ttft-access-log.test.ts.
    fleet = await startEngines({
      count: 1,
      flags: { profile: 'gpu-like', 'time-scale': 1, 'decode-ms-per-seq': 5, 'step-overhead-ms': 0, 'prefill-ms-per-token': 0.3 },
    });
    const engines = fleet.engines.map(engineAddress);
    const [grpcPort, adminPort, listenerPort] = [await freePort(), await freePort(), await freePort()];
    router = await startRouter({
      name: 'router-envoy-gateway-ttft',
      config: routerConfigDoc(engines, {
        strategy: 'predicted-ttft',
        server: {
          grpcAddress: `127.0.0.1:${grpcPort}`,
          adminAddress: `127.0.0.1:${adminPort}`,
          responseCompletion: 'access-log',
          responseIdleTimeoutMs: 600_000,
        },
      }),
    });
    resources = standaloneBindings(shippedDocs(), { listenerPort, services: { vllm: engines, cacheroute: [`127.0.0.1:${grpcPort}`] } });
    gw = await startEnvoyGateway({ resources, listenerPort, name: 'envoy-gateway-ttft', enableEnvoyPatchPolicy: true });
    await untilRouting(gw, agent);
  });

  after(() => stopAll(agent, gw, router, fleet));

  it('without the patch: every request completes from the log, none is timed, and the router says so', async () => {
    const n = 6;
    for (let i = 0; i < n; i++) await stream('plain', i);
    // The warm-up (not streamed) is an untimed entry too, but not an untimed streamed answer.
    expect(await settle('cacheroute_ttft_model_untimed_total', n), 'streamed answers with no first-token time').to.equal(n);
    expect(await metric('cacheroute_access_log_untimed_total'), 'routed entries without the tag').to.equal(n + 1);
    expect(await metric('cacheroute_ttft_model_observations_total'), 'nothing learned').to.equal(0);
    expect(await settle('cacheroute_pending_responses', 0)).to.equal(0);
    expect(await metric('cacheroute_endpoint_inflight_requests'), 'in flight').to.equal(0);
    const warnings = router!
      .tail(200)
      .split('\n')
      .filter((l) => l.includes('cacheroute.first_body_us') && l.includes('"warn"'));
    expect(warnings, 'one warning about the missing tag').to.have.length(1);
  });

  it('with the shipped EnvoyPatchPolicy added to the running gateway: every streamed request is learned from its entry', async () => {
    const timing = parseAllDocuments(readFileSync(join(REPO_ROOT, TIMING), 'utf8')).map((d) => d.toJS() as Obj);
    gw!.update([...resources, ...timing]);
    const fresh = new Agent({ keepAlive: false });
    // Envoy Gateway picks up the file change and pushes the patched listener: wait for a timed entry.
    const untimed0 = await metric('cacheroute_ttft_model_untimed_total');
    const until = Date.now() + 60_000;
    let probes = 0;
    while ((await metric('cacheroute_ttft_model_observations_total')) === 0) {
      if (Date.now() > until) throw new Error(`no timed entry 60 s after adding ${TIMING}; log ${gw!.logFile}\n${gw!.tail(40)}`);
      // Envoy Gateway replaces the listener: a probe may meet a connection being drained.
      await stream('switch', probes++, { via: fresh, tolerate: true });
      await sleep(300);
    }
    // The probes' entries reach the router in the access log's own time: wait until none is pending,
    // so a late probe entry is not counted among the timed requests below.
    expect(await settle('cacheroute_pending_responses', 0), 'probe entries pending').to.equal(0);
    const observed0 = await metric('cacheroute_ttft_model_observations_total');
    const untimed1 = await metric('cacheroute_ttft_model_untimed_total');
    expect(untimed1 - untimed0, 'only the probes before the switch went untimed').to.be.below(probes);
    const n = 12;
    for (let i = 0; i < n; i++) await stream('timed', i, { via: fresh });
    expect(await settle('cacheroute_ttft_model_observations_total', observed0 + n), 'every streamed request learned').to.equal(
      observed0 + n,
    );
    expect(await metric('cacheroute_ttft_model_untimed_total'), 'none untimed after the switch').to.equal(untimed1);
    fresh.destroy();
    // Not asserted: the fitted prefill rate. On the first run (12 timed samples after 6 untimed) it
    // came out 0.050 ms/token against the prior 0.106 and the engine's 0.3, where the plain-Envoy
    // test (ttft-access-log.test.ts, 24 samples) rises above 0.18; not yet explained.
  });
});
