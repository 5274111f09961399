/**
 * Router replicas sharing state over a real nats-server (JetStream), as real router
 * processes in front of real sim engines; each replica is driven over its own ext_proc
 * gRPC port as Envoy would (one stream per request):
 *  - load: requests held open on replica A show up in replica B's load picture of the
 *    engine A picked, and leave it when they finish;
 *  - index: a prompt routed via A is predicted on B (same engine, matched blocks > 0);
 *  - replay: a replica started later warms up from the JetStream stream before serving;
 *  - outage: with NATS stopped, the connected metric flips to 0 and routing goes on; once
 *    NATS is back, the metric flips to 1 and what each replica routed meanwhile reaches
 *    the other (outbox flush + catch-up from the last sequence) and all replicas hold the
 *    same index again;
 *  - a SIGKILLed replica's load leaves the others' picture within its peer timeout.
 */
import { expect } from 'chai';
import { startNatsServer, type NatsServer } from '../kit/nats-process.js';
import { engineAddress, routerConfigDoc, startEngines, startRouter, type RouterProcess, type SimEngineFleet } from '../kit/processes.js';
import { httpRequest } from '../kit/http-client.js';
import { connect, open, type ClientConversation } from '../kit/ext-proc-client.js';
import { chatBody, requestBody, requestHeaders } from '../kit/ext-proc-messages.js';
import { natsServer, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

const FDS = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' } as const;

interface Decision {
  readonly endpoint: string;
  readonly matchedBlocks: number;
  readonly totalBlocks: number;
  readonly candidates: readonly { readonly endpoint: string; readonly scores: Readonly<Record<string, number>> }[];
}

/** A distinct long prompt (many 64-char blocks); `tag` makes it unique from the first block on. */
function prompt(tag: string): string {
  return `${tag}: ` + 'replicated prefixes stay warm on every router replica. '.repeat(24);
}

async function getJson<T>(url: string): Promise<T> {
  const r = await httpRequest(url, { timeoutMs: 5000 });
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status}`);
  return JSON.parse(await r.text()) as T;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last !== undefined ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

class Replica {
  private readonly client;
  private readonly open: ClientConversation[] = [];

  constructor(readonly proc: RouterProcess) {
    this.client = connect(Number(proc.grpcAddress.split(':').pop()));
  }

  /** Routes one request and keeps its stream open (in flight) until `finishAll`. */
  async route(content: string): Promise<Decision> {
    const c = open(this.client);
    this.open.push(c);
    c.send(requestHeaders(FDS), requestBody(chatBody(content), true));
    await c.waitFor(2, 10_000);
    const decisions = await getJson<{ decisions: (Decision & { requestId: string })[] }>(`${this.proc.adminUrl}/debug/decisions?n=1`);
    const d = decisions.decisions[0];
    if (d === undefined) throw new Error('no decision recorded');
    return d;
  }

  /** Routes and finishes at once (the stream is cancelled, as Envoy does at a request's end). */
  async routeAndFinish(content: string): Promise<Decision> {
    const d = await this.route(content);
    this.open.pop()?.cancel();
    return d;
  }

  finishAll(): void {
    for (const c of this.open.splice(0)) c.cancel();
  }

  /** The in-flight count this replica's load picture shows for `endpointId`. */
  async inflightSeen(endpointId: string): Promise<number> {
    const body = await getJson<unknown>(`${this.proc.adminUrl}/debug/endpoints`);
    const list = (Array.isArray(body) ? body : (body as { endpoints: unknown[] }).endpoints) as {
      id: string;
      load?: { inflightRequests?: number };
    }[];
    return list.find((e) => e.id === endpointId)?.load?.inflightRequests ?? 0;
  }

  async stats(): Promise<{
    connected: boolean;
    peers: string[];
    index?: { changesApplied: number; replay: { caughtUp: boolean; targetSeq: number; appliedSeq: number } };
  }> {
    return getJson(`${this.proc.adminUrl}/debug/replication`);
  }

  /** Per-engine block counts and key digests, as one comparable string. */
  async indexDigest(): Promise<string> {
    return JSON.stringify((await getJson<{ endpoints: unknown[] }>(`${this.proc.adminUrl}/debug/replication/index`)).endpoints);
  }

  async metrics(): Promise<string> {
    return this.proc.metrics();
  }

  async close(): Promise<void> {
    this.finishAll();
    this.client.close();
    await this.proc.stop();
  }
}

describe('e2e: router replicas share load and index over NATS', function () {
  this.timeout(120_000);
  let nats: NatsServer | undefined;
  let fleet: SimEngineFleet | undefined;
  const replicas: Replica[] = [];
  let engines: string[] = [];

  async function startReplica(name: string): Promise<Replica> {
    const config = routerConfigDoc(engines, {
      strategy: 'cache-aware',
      // This test plays Envoy on each replica's ext_proc stream, response side included (there
      // is no Envoy here to send the access log that ends a request on the default path).
      server: { responseCompletion: 'ext-proc' },
      replication: {
        enabled: true,
        servers: [nats!.url],
        replicaId: name,
        reconnectWaitMs: 200,
        load: { intervalMs: 100, peerTimeoutMs: 600 },
        index: { flushIntervalMs: 20, replayWaitMs: 5000, maxAgeMs: 60_000 },
      },
    });
    const r = new Replica(await startRouter({ config, name, readyTimeoutMs: 60_000 }));
    replicas.push(r);
    return r;
  }

  before(async function () {
    requireComponents(this, natsServer(), routerBuild(), simEngineBuild());
    nats = await startNatsServer({ name: 'nats-replication' });
    fleet = await startEngines({ count: 2, flags: { profile: 'gpu-like' } });
    engines = fleet.engines.map(engineAddress);
  });

  after(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.close()));
    await fleet?.stop();
    await nats?.stop();
  });

  it('shares in-flight load, the prefix index, warms a late replica by replay and survives a NATS outage', async () => {
    const a = await startReplica('replica-a');
    const b = await startReplica('replica-b');
    await waitFor('A and B to see each other', async () => {
      const [sa, sb] = [await a.stats(), await b.stats()];
      return sa.connected && sb.connected && sa.peers.includes('replica-b') && sb.peers.includes('replica-a') ? true : undefined;
    });

    // Load: three requests held open on A are in B's load picture of A's engine.
    const held: Decision[] = [];
    for (let i = 0; i < 3; i++) held.push(await a.route(prompt(`held-${i}`)));
    const perEngine = new Map<string, number>();
    for (const d of held) perEngine.set(d.endpoint, (perEngine.get(d.endpoint) ?? 0) + 1);
    for (const [id, n] of perEngine) {
      await waitFor(`B to see ${n} in flight on ${id}`, async () => ((await b.inflightSeen(id)) === n ? true : undefined), 5000);
    }
    // B's queue scorer ranks the engines by A's load (B itself has nothing in flight).
    const cold = await b.routeAndFinish(prompt('cold-on-b'));
    const queue = new Map(cold.candidates.map((c) => [c.endpoint, c.scores['queue-scorer'] ?? 1]));
    const [busiest, quietest] = engines.map((id) => ({ id, n: perEngine.get(id) ?? 0 })).sort((x, y) => y.n - x.n);
    if (busiest!.n > quietest!.n) expect(queue.get(busiest!.id)!, JSON.stringify(cold.candidates)).to.be.below(queue.get(quietest!.id)!);
    a.finishAll();
    for (const id of perEngine.keys()) {
      await waitFor(`B to see nothing in flight on ${id}`, async () => ((await b.inflightSeen(id)) === 0 ? true : undefined), 5000);
    }

    // Index: a prompt routed via A is predicted on B (same engine, the whole prefix matched).
    const appliedOnB = (await b.stats()).index?.changesApplied ?? 0;
    const viaA = await a.routeAndFinish(prompt('shared-1'));
    expect(viaA.matchedBlocks, 'cold on A').to.equal(0);
    await waitFor(
      "B to apply A's insert",
      async () => (((await b.stats()).index?.changesApplied ?? 0) > appliedOnB ? true : undefined),
      5000,
    );
    const onB = await b.routeAndFinish(prompt('shared-1'));
    expect(onB.endpoint).to.equal(viaA.endpoint);
    expect(onB.matchedBlocks).to.be.greaterThan(0);
    expect(onB.matchedBlocks).to.equal(onB.totalBlocks);

    // Replay: C starts after both prompts were routed and is warm when it reports ready.
    const appliedOnA = (await a.stats()).index?.changesApplied ?? 0;
    const viaB = await b.routeAndFinish(prompt('shared-2'));
    await waitFor(
      "the stream to hold B's batch",
      async () => (((await a.stats()).index?.changesApplied ?? 0) > appliedOnA ? true : undefined),
      5000,
    );
    const c = await startReplica('replica-c');
    const sc = await c.stats();
    expect(sc.index?.replay.caughtUp, JSON.stringify(sc)).to.equal(true);
    expect(sc.index?.replay.targetSeq).to.be.greaterThan(0);
    for (const [p, expected] of [
      [prompt('shared-1'), viaA.endpoint],
      [prompt('shared-2'), viaB.endpoint],
    ] as const) {
      const d = await c.routeAndFinish(p);
      expect(d.endpoint).to.equal(expected);
      expect(d.matchedBlocks).to.equal(d.totalBlocks);
    }

    // Outage: NATS stopped → the metric flips, routing goes on on each replica's own state.
    await nats!.stop();
    for (const r of [a, b]) {
      await waitFor(
        'connected = 0',
        async () => (metric(await r.metrics(), 'cacheroute_replication_connected') === 0 ? true : undefined),
        10_000,
      );
    }
    const duringA = await a.routeAndFinish(prompt('outage-a'));
    const duringB = await b.routeAndFinish(prompt('outage-b'));
    expect(duringA.endpoint).to.be.a('string');
    expect(duringB.endpoint).to.be.a('string');
    expect((await a.stats()).peers, 'peers dropped while away').to.deep.equal([]);

    // Back: the metric flips to 1, and each replica learns what the other routed meanwhile.
    const appliedBefore = { a: (await a.stats()).index?.changesApplied ?? 0, b: (await b.stats()).index?.changesApplied ?? 0 };
    await nats!.start();
    for (const r of [a, b]) {
      await waitFor(
        'connected = 1',
        async () => (metric(await r.metrics(), 'cacheroute_replication_connected') === 1 ? true : undefined),
        15_000,
      );
    }
    await waitFor(
      'catch-up on A',
      async () => {
        const s = await a.stats();
        return s.index?.replay.caughtUp === true && s.peers.includes('replica-b') ? true : undefined;
      },
      15_000,
    );
    // (Routing a prompt inserts it, so wait for the changes to arrive before asking once.)
    await waitFor(
      "A and B to apply each other's outage-time changes",
      async () => {
        const [sa, sb] = [await a.stats(), await b.stats()];
        return (sa.index?.changesApplied ?? 0) > appliedBefore.a && (sb.index?.changesApplied ?? 0) > appliedBefore.b ? true : undefined;
      },
      15_000,
    );
    const bSeesA = await b.routeAndFinish(prompt('outage-a'));
    expect(bSeesA.endpoint).to.equal(duringA.endpoint);
    expect(bSeesA.matchedBlocks).to.equal(bSeesA.totalBlocks);
    const aSeesB = await a.routeAndFinish(prompt('outage-b'));
    expect(aSeesB.endpoint).to.equal(duringB.endpoint);
    expect(aSeesB.matchedBlocks).to.equal(aSeesB.totalBlocks);

    // Reconverged: every replica holds the same blocks per engine (count and key digest).
    await waitFor(
      'A, B and C to hold the same index',
      async () => {
        const [da, db, dc] = await Promise.all([a, b, c].map((r) => r.indexDigest()));
        return da === db && db === dc ? true : undefined;
      },
      5000,
    );

    // A SIGKILLed replica's load vanishes from the others' picture within its peer timeout.
    const onC = await c.route(prompt('held-on-c'));
    await waitFor("B to see C's request", async () => ((await b.inflightSeen(onC.endpoint)) === 1 ? true : undefined), 5000);
    await c.proc.stop({ signal: 'SIGKILL' });
    const killedAt = Date.now();
    // Both views of C (its load in B's endpoint table and C in B's peer list) must go; they are read
    // one after the other, so wait for the pair rather than asserting the second after the first.
    await waitFor(
      "C's load and C itself to vanish on B",
      async () => {
        if ((await b.inflightSeen(onC.endpoint)) !== 0) return undefined;
        return (await b.stats()).peers.includes('replica-c') ? undefined : true;
      },
      5000,
    );
    expect(Date.now() - killedAt).to.be.below(3000); // peerTimeoutMs 600 + one 100 ms refresh + polling
  });
});
