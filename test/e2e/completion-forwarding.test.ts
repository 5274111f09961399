/**
 * Router replicas behind one Envoy whose gRPC access log goes to ONE cluster that
 * load-balances across them (`accessLogStream: 'load-balanced'`, as behind a Kubernetes
 * Service): the log stream reaches one replica, which forwards the completions of the other
 * replicas' tickets to their owners over a real nats-server. Responses never pass through a
 * router (ext_proc response processing SKIP). Real Envoy, real router processes, sim engines:
 *  - every replica's pending tickets and in-flight counts return to exactly 0, and most
 *    completions were forwarded;
 *  - with NATS stopped, forwarded completions are lost, and the owners' tickets still
 *    return to 0 within the orphan age (they were held while the path was lossy);
 *  - SIGKILLing the replica that receives the log stream while responses stream cuts none
 *    of them, and the survivors' accounting still returns to 0 within the orphan age.
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { groupChat, mapLimit } from '../kit/chat-requests.js';
import { startNatsServer, type NatsServer } from '../kit/nats-process.js';
import { engineAddress, routerConfigDoc, sleep, startEngines, startEnvoy, startRouter } from '../kit/processes.js';
import type { EnvoyProcess, RouterProcess, SimEngineFleet } from '../kit/processes.js';
import { httpRequest } from '../kit/http-client.js';
import { streamRequest, type StreamResult, type StreamedRequest } from '../kit/sse-request.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, natsServer, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

const REPLICAS = 3;
const ORPHAN_AGE_MS = 4000;
const LOSSY_GRACE_MS = 2000;
const OUTPUT_TOKENS = 24;
const ENGINE_FLAGS = {
  profile: 'gpu-like',
  'time-scale': 1,
  'decode-ms-per-seq': 10,
  'step-overhead-ms': 0,
  'prefill-ms-per-token': 0.01,
} as const;

function chat(i: number): StreamedRequest {
  return groupChat(i, { tag: 'forward-group', groups: 12, systemTokens: 200, maxTokens: OUTPUT_TOKENS });
}

interface Settled {
  readonly pending: number;
  readonly inflight: number;
  readonly ms: number;
  readonly text: string;
}

/** Polls a replica's /metrics until its pending tickets and in-flight counts are 0 (or timeout). */
async function settle(r: RouterProcess, timeoutMs: number): Promise<Settled> {
  const start = Date.now();
  for (;;) {
    const text = await r.metrics();
    const pending = sumSamples(text, 'cacheroute_pending_responses');
    const inflight = sumSamples(text, 'cacheroute_endpoint_inflight_requests');
    if ((pending === 0 && inflight === 0) || Date.now() - start > timeoutMs) return { pending, inflight, ms: Date.now() - start, text };
    await sleep(100);
  }
}

async function accessLogStreams(r: RouterProcess): Promise<number> {
  const res = await httpRequest(`${r.adminUrl}/debug/streams`, { timeoutMs: 3000 });
  return (JSON.parse(await res.text()) as { accessLog: { streams: number } }).accessLog.streams;
}

describe('e2e: completions forwarded to the ticket owner (one load-balanced access log stream)', function () {
  this.timeout(180_000);
  let nats: NatsServer | undefined;
  let fleet: SimEngineFleet | undefined;
  const routers: RouterProcess[] = [];
  let envoy: EnvoyProcess | undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let next = 0;

  const run = (n: number, concurrency: number): Promise<StreamResult[]> =>
    mapLimit(
      Array.from({ length: n }, () => next++),
      concurrency,
      (i) => streamRequest(chat(i), { baseUrl: envoy!.url, model: 'sim-model', timeoutMs: 30_000, agent }),
    );
  const failures = (rs: readonly StreamResult[]): string[] =>
    rs
      .filter((r) => r.outcome !== 'ok' || r.outputTokens !== OUTPUT_TOKENS)
      .map((r) => `${r.outcome} ${r.status} ${r.outputTokens} ${r.error ?? ''}`);

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild(), natsServer());
    nats = await startNatsServer({ name: 'nats-forwarding' });
    fleet = await startEngines({ count: 3, flags: ENGINE_FLAGS });
    const engines = fleet.engines.map(engineAddress);
    for (let i = 0; i < REPLICAS; i++) {
      routers.push(
        await startRouter({
          name: `router-fwd-${i}`,
          // The full suite shares 2 cores with other work: a start can take longer than 20 s.
          readyTimeoutMs: 60_000,
          config: routerConfigDoc(engines, {
            replication: {
              enabled: true,
              servers: [nats.url],
              replicaId: `fwd-${i}`,
              completions: { orphanAgeMs: ORPHAN_AGE_MS, lossyGraceMs: LOSSY_GRACE_MS },
            },
          }),
        }),
      );
    }
    envoy = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-forwarding',
      engines,
      routerAddresses: routers.map((r) => r.grpcAddress),
      accessLogStream: 'load-balanced',
      failureModeAllow: true,
    });
    await envoy.waitForClusterHealth('cacheroute_extproc', true);
    // Every replica sees the others (load reports) before traffic.
    for (const r of routers) {
      const deadline = Date.now() + 10_000;
      while (sumSamples(await r.metrics(), 'cacheroute_replication_peers') < REPLICAS - 1 && Date.now() < deadline) await sleep(100);
    }
  });

  after(async () => {
    agent.destroy();
    await envoy?.stop();
    for (const r of routers) await r.stop();
    await fleet?.stop();
    await nats?.stop();
  });

  it("every replica's accounting returns to exactly 0; most completions are forwarded to their owner", async () => {
    const results = await run(90, 9);
    expect(failures(results), 'failed requests').to.deep.equal([]);
    let forwardedOut = 0;
    let forwardedIn = 0;
    let decisions = 0;
    const receivers: number[] = [];
    for (const r of routers) {
      const s = await settle(r, 3000);
      expect({ name: r.name, pending: s.pending, inflight: s.inflight }).to.deep.equal({ name: r.name, pending: 0, inflight: 0 });
      forwardedOut += sumSamples(s.text, 'cacheroute_replication_completions_forwarded_total', { direction: 'out' });
      forwardedIn += sumSamples(s.text, 'cacheroute_replication_completions_forwarded_total', { direction: 'in' });
      decisions += sumSamples(s.text, 'cacheroute_decisions_total');
      expect(sumSamples(s.text, 'cacheroute_decisions_total'), `${r.name} routed some`).to.be.above(0);
      expect(sumSamples(s.text, 'cacheroute_pending_responses_finished_total', { how: 'expired' }), r.name).to.equal(0);
      expect(sumSamples(s.text, 'cacheroute_pending_responses_finished_total', { how: 'orphaned' }), r.name).to.equal(0);
      if ((await accessLogStreams(r)) > 0) receivers.push(routers.indexOf(r));
    }
    // The log stream reached fewer replicas than routed: the rest was forwarded, and every
    // forwarded completion was finished by its owner.
    expect(receivers.length, 'replicas receiving the access log').to.be.below(REPLICAS);
    expect(forwardedOut, 'forwarded completions').to.be.above(decisions / 2);
    expect(forwardedIn).to.equal(forwardedOut);
    console.log(
      `      ${decisions} routed, ${forwardedOut} completions forwarded to their owner (log stream on replica ${receivers.join(',')})`,
    );
  });

  it('with NATS stopped, owners still return to 0 within the orphan age (path marked lossy)', async () => {
    await nats!.stop();
    await sleep(500);
    const results = await run(45, 9);
    expect(failures(results), 'failed requests').to.deep.equal([]);
    const lastResponseAt = Date.now();
    let orphaned = 0;
    for (const r of routers) {
      const s = await settle(r, ORPHAN_AGE_MS + 4000);
      expect({ name: r.name, pending: s.pending, inflight: s.inflight }).to.deep.equal({ name: r.name, pending: 0, inflight: 0 });
      expect(sumSamples(s.text, 'cacheroute_completion_path_lossy'), `${r.name} says its path is lossy`).to.equal(1);
      orphaned += sumSamples(s.text, 'cacheroute_pending_responses_finished_total', { how: 'orphaned' });
    }
    const settledMs = Date.now() - lastResponseAt;
    expect(orphaned, 'tickets whose forwarded completion was lost').to.be.above(0);
    expect(settledMs, 'settled within the orphan age (+ sweep and scrape slack)').to.be.below(ORPHAN_AGE_MS + 4000);
    console.log(`      NATS down: ${orphaned} tickets ended by the orphan age; all replicas at 0 ${settledMs} ms after the last response`);
    await nats!.start();
    for (const r of routers) {
      const deadline = Date.now() + 10_000;
      let text = await r.metrics();
      const ready = (t: string): boolean =>
        sumSamples(t, 'cacheroute_replication_connected') === 1 &&
        sumSamples(t, 'cacheroute_replication_peers') >= REPLICAS - 1 &&
        sumSamples(t, 'cacheroute_completion_path_lossy') === 0;
      while (!ready(text) && Date.now() < deadline) {
        await sleep(100);
        text = await r.metrics();
      }
      expect(sumSamples(text, 'cacheroute_completion_path_lossy'), `${r.name} lossy ${LOSSY_GRACE_MS} ms after NATS returned`).to.equal(0);
    }
  });

  it('SIGKILL of the replica receiving the access log while responses stream cuts none of them', async () => {
    let victim = routers[0]!;
    for (const r of routers) if ((await accessLogStreams(r)) > 0) victim = r;
    const survivors = routers.filter((r) => r !== victim);
    const before = await Promise.all(
      survivors.map(async (r) => sumSamples(await r.metrics(), 'cacheroute_replication_completions_forwarded_total', { direction: 'in' })),
    );
    const orphanedBefore = await Promise.all(
      survivors.map(async (r) => sumSamples(await r.metrics(), 'cacheroute_pending_responses_finished_total', { how: 'orphaned' })),
    );
    const kill = (async () => {
      await sleep(1200);
      process.kill(victim.pid, 'SIGKILL');
    })();
    const results = await run(90, 9);
    await kill;
    expect(failures(results), 'failed or cut responses').to.deep.equal([]);
    const lastResponseAt = Date.now();
    let forwardedIn = 0;
    let orphaned = 0;
    for (const [i, r] of survivors.entries()) {
      const s = await settle(r, ORPHAN_AGE_MS + 4000);
      expect({ name: r.name, pending: s.pending, inflight: s.inflight }).to.deep.equal({ name: r.name, pending: 0, inflight: 0 });
      forwardedIn += sumSamples(s.text, 'cacheroute_replication_completions_forwarded_total', { direction: 'in' }) - before[i]!;
      orphaned += sumSamples(s.text, 'cacheroute_pending_responses_finished_total', { how: 'orphaned' }) - orphanedBefore[i]!;
    }
    const settledMs = Date.now() - lastResponseAt;
    console.log(
      `      SIGKILL of ${victim.name}: 0 of ${results.length} failed; survivors: ${forwardedIn} completions forwarded in, ${orphaned} ended by the orphan age, at 0 ${settledMs} ms after the last response`,
    );
    // Envoy moved its log stream to a survivor, which forwarded the other survivor's entries.
    expect(forwardedIn, 'completions forwarded after the kill').to.be.above(0);
  });
});
