/**
 * What clients see when the router goes away: with `failure_mode_allow: true` Envoy fails
 * open (override_host's fallback policy still serves; ORIGINAL_DST has no destination and
 * answers 503), with `false` it fails closed (500). When a router comes back on the same
 * address, routing with affinity resumes. The steps run in order on one set of processes.
 * Also: a dead engine in the router's pick is retried on the fallbacks (override_host) or
 * answered 503 (ORIGINAL_DST).
 */
import { expect } from 'chai';
import { CHAT_PATH, chatRequest, servedBy, systemPrompt } from '../kit/chat-requests.js';
import { postJson } from '../kit/http-client.js';
import {
  engineAddress,
  freePort,
  routerConfigDoc,
  startEngines,
  startEnvoy,
  startRouter,
  startStack,
  type EnvoyProcess,
  type RouterProcess,
  type SimEngineFleet,
  type Stack,
} from '../kit/processes.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

interface Case {
  readonly variant: 'override-host' | 'original-dst';
  readonly failureModeAllow: boolean;
  /** Status with the router down. */
  readonly routerDown: number;
}

const CASES: readonly Case[] = [
  { variant: 'override-host', failureModeAllow: true, routerDown: 200 },
  { variant: 'override-host', failureModeAllow: false, routerDown: 500 },
  { variant: 'original-dst', failureModeAllow: true, routerDown: 503 },
  { variant: 'original-dst', failureModeAllow: false, routerDown: 500 },
];

const label = (c: Case): string => `${c.variant} failure_mode_allow=${c.failureModeAllow}`;

describe('e2e: Envoy failure modes when the router is down', function () {
  this.timeout(60_000);
  let stack: Stack;
  let revived: RouterProcess | undefined;

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    this.timeout(60_000);
    stack = await startStack({
      engines: { count: 4, flags: { profile: 'gpu-like', 'time-scale': 0.05 } },
      envoys: CASES.map((c) => ({
        variant: c.variant,
        failureModeAllow: c.failureModeAllow,
        name: `envoy-${c.variant}-${c.failureModeAllow ? 'open' : 'closed'}`,
      })),
    });
  });

  after(async () => {
    await revived?.stop();
    await stack?.stop();
  });

  const urlOf = (i: number): string => {
    const e = stack.envoys[i];
    if (!e) throw new Error(`no envoy ${i}`);
    return `${e.url}${CHAT_PATH}`;
  };

  it('routes through every variant while the router is up', async () => {
    const system = systemPrompt('failure-up', 400);
    const served: string[] = [];
    for (let i = 0; i < CASES.length; i++) {
      const res = await postJson(urlOf(i), chatRequest(system, `up ${i}`));
      expect(res.status, `${label(CASES[i]!)}: ${res.text()}`).to.equal(200);
      served.push(servedBy(res));
    }
    expect(new Set(served).size).to.equal(1);
  });

  it('fails open or closed as configured once the router is stopped', async () => {
    const router = stack.router;
    if (!router) throw new Error('no router');
    const exit = await router.stop();
    expect(exit.code).to.equal(0); // graceful drain
    // Fail-open needs Envoy's health check to have noticed (see envoy/override-host.yaml):
    // until then a stream that fails to connect after body chunks were sent fails closed.
    await Promise.all(stack.envoys.map((e) => e.waitForClusterHealth('cacheroute_extproc', false)));
    for (let i = 0; i < CASES.length; i++) {
      const c = CASES[i]!;
      for (let k = 0; k < 3; k++) {
        const res = await postJson(urlOf(i), chatRequest(systemPrompt(`failure-down-${k}`, 200), `down ${i}`));
        expect(res.status, `${label(c)}: ${res.text()}`).to.equal(c.routerDown);
        if (c.routerDown === 200) expect(stack.engineAddresses).to.include(servedBy(res));
        else expect(servedBy(res), label(c)).to.equal('');
      }
    }
    // Envoy counted the fail-open decisions.
    const allowed = await stack.envoys[0]!.stat('http.ingress.ext_proc.failure_mode_allowed');
    expect(allowed).to.be.at.least(3);
  });

  it('routes with affinity again when a router comes back on the same address', async () => {
    const old = stack.router;
    if (!old) throw new Error('no router');
    const grpcAddress = old.grpcAddress;
    revived = await startRouter({
      name: 'router-revived',
      config: routerConfigDoc(stack.engineAddresses, { server: { grpcAddress } }),
    });
    expect(revived.grpcAddress).to.equal(grpcAddress);
    await Promise.all(stack.envoys.map((e) => e.waitForClusterHealth('cacheroute_extproc', true)));
    const system = systemPrompt('failure-revived', 400);
    for (let i = 0; i < CASES.length; i++) {
      const served: string[] = [];
      for (let k = 0; k < 3; k++) {
        const res = await postJson(urlOf(i), chatRequest(system, `revived ${i}.${k}`));
        expect(res.status, `${label(CASES[i]!)}: ${res.text()}`).to.equal(200);
        served.push(servedBy(res));
      }
      expect(new Set(served).size, label(CASES[i]!)).to.equal(1);
    }
  });
});

describe('e2e: Envoy retries when the chosen engine is dead', function () {
  this.timeout(60_000);
  let fleet: SimEngineFleet | undefined;
  let router: RouterProcess | undefined;
  const envoys: EnvoyProcess[] = [];
  let live: string[] = [];
  let dead = '';

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    this.timeout(60_000);
    fleet = await startEngines({ count: 4, flags: { profile: 'gpu-like', 'time-scale': 0.05 } });
    live = fleet.engines.map(engineAddress);
    dead = `127.0.0.1:${await freePort()}`; // nothing listens here
    const all = [...live, dead];
    // Round robin, no engine scraping and no health checks: the router keeps choosing the
    // dead engine every 5th time, so Envoy's handling of a dead pick is what is tested here
    // (engine-health.test.ts covers the router taking dead engines out).
    router = await startRouter({
      name: 'router-dead-engine',
      config: routerConfigDoc(all, { strategy: 'round-robin', engineMetrics: { enabled: false }, health: { enabled: false } }),
    });
    for (const variant of ['override-host', 'original-dst'] as const) {
      envoys.push(await startEnvoy({ variant, name: `envoy-dead-${variant}`, engines: all, routerAddress: router.grpcAddress }));
    }
  });

  after(async () => {
    await Promise.all(envoys.map((e) => e.stop()));
    await router?.stop();
    await fleet?.stop();
  });

  it('override-host: connect failures are retried on the fallbacks in the list', async () => {
    const envoy = envoys[0]!;
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await postJson(`${envoy.url}${CHAT_PATH}`, chatRequest(systemPrompt(`dead-oh-${i}`, 100), 'q'));
      statuses.push(res.status);
      expect(live).to.include(servedBy(res));
    }
    expect(
      statuses.every((s) => s === 200),
      statuses.join(','),
    ).to.equal(true);
    expect(await envoy.stat('cluster.engines.upstream_rq_retry')).to.be.at.least(2);
  });

  it('original-dst: a dead pick is a 503 (one address, nothing to retry on)', async () => {
    const envoy = envoys[1]!;
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await postJson(`${envoy.url}${CHAT_PATH}`, chatRequest(systemPrompt(`dead-od-${i}`, 100), 'q'));
      statuses.push(res.status);
      if (res.status === 200) expect(live).to.include(servedBy(res));
    }
    expect(statuses.filter((s) => s === 503).length, statuses.join(',')).to.equal(2);
    expect(statuses.filter((s) => s === 200).length, statuses.join(',')).to.equal(8);
  });
});
