/**
 * The Kubernetes membership scenario, with real processes end to end: a real kube-apiserver
 * + etcd, simulated engines listening on 127.0.0.2… (each one a "pod": created through the
 * API, its status patched Ready with that podIP), the router (`cacheroute serve`) discovering
 * them by label selector and writing Envoy's EDS file, and Envoy (override-host-eds) in front,
 * under a steady bounded request stream:
 *
 *   1. 2 Ready pods; traffic flows on both.
 *   2. scale to 4: time until each new engine serves a request sent after the pods turned Ready;
 *   3. delete one pod: time until the last request that started after the delete was served
 *      by it (picks stop), and whether its in-flight requests finished;
 *   4. restart the API server: failed requests during the outage, then time until a pod added
 *      after the restart serves traffic.
 *
 * Used by test/e2e/kube-discovery.test.ts (asserts the bounds); the tool that repeated it for
 * decision 0310 (bench/discovery/run-kube-membership.ts) is in the tree at b6a651d.
 */
import { chatRequest, servedBy, CHAT_PATH } from './chat-requests.js';
import { startEnvoy, type EnvoyProcess } from './envoy-process.js';
import { postJson } from './http-client.js';
import { startKubeCluster, type KubeCluster } from './kube-cluster.js';
import { freePort, runDir, sleep } from './managed-process.js';
import { routerConfigDoc, startRouter, type RouterProcess } from './processes.js';
import { startSimEngines, type SimEngineFleet } from './sim-engines.js';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';

export interface KubeMembershipOptions {
  /** Requests per second of the background stream (bounded by `maxRequests`). */
  readonly rps?: number;
  readonly maxRequests?: number;
  /** Router strategy (default cache-aware, the router's default). */
  readonly strategy?: string;
  readonly log?: (line: string) => void;
}

export interface KubeMembershipResult {
  /** ms from both new pods Ready to the first response each new engine served (max of the two). */
  readonly scaleUpMs: number;
  readonly scaleUpPerEngineMs: readonly number[];
  /** ms from the pod delete to the start of the last request the deleted engine served. */
  readonly stopPicksMs: number;
  /** Requests in flight to the deleted engine at the delete, and how many of them failed. */
  readonly inflightAtDelete: number;
  readonly inflightFailed: number;
  /** Requests that failed while the API server was down. */
  readonly failedDuringOutage: number;
  readonly requestsDuringOutage: number;
  /** ms from the API server being ready again (and a new pod Ready) to traffic on that pod. */
  readonly afterRestartMs: number;
  readonly apiDownMs: number;
  readonly totalRequests: number;
  readonly failedRequests: number;
}

interface Sample {
  readonly startMs: number;
  endMs: number;
  engine: string;
  status: number;
}

const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6'];

/** Runs the scenario once; everything it started is stopped before it returns. */
export async function runKubeMembership(opts: KubeMembershipOptions = {}): Promise<KubeMembershipResult> {
  const log = opts.log ?? (() => {});
  const rps = opts.rps ?? 25;
  const maxRequests = opts.maxRequests ?? 4000;
  let cluster: KubeCluster | undefined;
  const fleets: SimEngineFleet[] = [];
  let router: RouterProcess | undefined;
  let envoy: EnvoyProcess | undefined;
  let streaming = false;
  let stream: Promise<void> = Promise.resolve();
  try {
    cluster = await startKubeCluster({ name: 'kube-membership' });
    const ns = await cluster.createNamespace('fleet');
    const port = await freePort();
    for (const host of HOSTS) {
      fleets.push(await startSimEngines({ count: 1, host, basePort: port, flags: { profile: 'gpu-like' } }));
    }
    const engineId = (i: number): string => `${HOSTS[i]}:${port}`;
    const labels = { app: 'sim-engine' };
    await cluster.createReadyPod(ns, 'engine-0', labels, HOSTS[0]!);
    await cluster.createReadyPod(ns, 'engine-1', labels, HOSTS[1]!);

    const edsDir = join(runDir(), 'kube-membership-eds');
    mkdirSync(edsDir, { recursive: true });
    const edsPath = join(edsDir, 'engines.json');
    router = await startRouter({
      name: 'router-kube',
      config: routerConfigDoc([], {
        ...(opts.strategy !== undefined ? { strategy: opts.strategy } : {}),
        discovery: {
          kubeconfig: cluster.kubeconfigPath,
          initialSyncTimeoutMs: 10_000,
          envoyEds: { path: edsPath, clusterName: 'engines' },
          sources: [{ type: 'kubernetes', namespace: ns, selector: labels, port }],
        },
        telemetry: { logLevel: 'info' },
      }),
    });
    envoy = await startEnvoy({ variant: 'override-host-eds', edsPath, routerAddress: router.grpcAddress, listenerPort: 0, adminPort: 0 });
    const url = `${envoy.url}${CHAT_PATH}`;

    const samples: Sample[] = [];
    const t0 = Date.now();
    const now = (): number => Date.now() - t0;
    /** One request through Envoy, recorded as a Sample (status -1: no response). */
    const send = (body: Record<string, unknown>): { s: Sample; p: Promise<void> } => {
      const s: Sample = { startMs: now(), endMs: -1, engine: '', status: 0 };
      const p = postJson(url, body, { timeoutMs: 30_000 })
        .then((res) => {
          s.status = res.status;
          s.engine = servedBy(res);
        })
        .catch(() => {
          s.status = -1;
        })
        .finally(() => {
          s.endMs = now();
        });
      return { s, p };
    };
    streaming = true;
    stream = (async () => {
      const inflight = new Set<Promise<void>>();
      for (let k = 0; streaming && k < maxRequests; k++) {
        const { s, p } = send(chatRequest(`fleet member test ${k % 7}`, `question ${k} ${Math.random()}`, { maxTokens: 4 }));
        samples.push(s);
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        await sleep(1000 / rps);
      }
      await Promise.all(inflight);
    })();

    const waitFor = async (what: string, cond: () => boolean, ms: number): Promise<void> => {
      const end = Date.now() + ms;
      while (!cond()) {
        if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms (router log: ${router?.logFile})`);
        await sleep(20);
      }
    };
    const servedAfter = (engine: string, fromMs: number): Sample[] =>
      samples.filter((s) => s.startMs >= fromMs && s.engine === engine && s.status === 200);

    await waitFor(
      'traffic on the first two engines',
      () => servedAfter(engineId(0), 0).length > 0 && servedAfter(engineId(1), 0).length > 0,
      20_000,
    );
    log('phase 1: two engines serve');

    // 2. Scale 2 -> 4.
    await cluster.createReadyPod(ns, 'engine-2', labels, HOSTS[2]!);
    await cluster.createReadyPod(ns, 'engine-3', labels, HOSTS[3]!);
    const readyAt = now();
    await waitFor(
      'traffic on the new engines',
      () => servedAfter(engineId(2), readyAt).length > 0 && servedAfter(engineId(3), readyAt).length > 0,
      15_000,
    );
    const perEngine = [2, 3].map((i) => Math.min(...servedAfter(engineId(i), readyAt).map((s) => s.endMs)) - readyAt);
    log(`phase 2: scale-up ${perEngine.join(', ')} ms`);

    // 3. Delete engine-1 while long requests (~2.5 s of decode each) run on every engine:
    //    picks to it stop, and the ones it already has finish.
    const long = Array.from({ length: 8 }, (_, k) =>
      send(chatRequest(`long request ${k}`, `long ${k} ${Math.random()}`, { maxTokens: 300, ignoreEos: true })),
    );
    await sleep(300);
    const deletedAt = now();
    const inflightToDeleted = [...samples.filter((s) => s.endMs < 0), ...long.map((l) => l.s)];
    await cluster.deletePod(ns, 'engine-1');
    await sleep(3000);
    const lastPick = Math.max(deletedAt, ...servedAfter(engineId(1), deletedAt).map((s) => s.startMs));
    const stopPicksMs = lastPick - deletedAt;
    await Promise.all(long.map((l) => l.p));
    await waitFor('in-flight requests of the delete finished', () => inflightToDeleted.every((s) => s.endMs >= 0), 20_000);
    // Requests that started before the delete and were still running after it, on the deleted engine.
    const inflightAtDelete = inflightToDeleted.filter((s) => s.engine === engineId(1) && s.endMs > deletedAt).length;
    const inflightFailed = inflightToDeleted.filter((s) => s.status !== 200).length;
    samples.push(...long.map((l) => l.s));
    log(`phase 3: last pick ${stopPicksMs} ms after delete; ${inflightAtDelete} in flight, ${inflightFailed} failed`);

    // 4. API server restart.
    const downAt = now();
    await cluster.stopApiServer();
    await sleep(2000);
    await cluster.startApiServer();
    const upAt = now();
    await cluster.createReadyPod(ns, 'engine-4', labels, HOSTS[4]!);
    const podAt = now();
    await waitFor('traffic on a pod added after the restart', () => servedAfter(engineId(4), podAt).length > 0, 30_000);
    const afterRestartMs = Math.min(...servedAfter(engineId(4), podAt).map((s) => s.endMs)) - podAt;
    const outage = samples.filter((s) => s.startMs >= downAt && s.startMs <= upAt);
    log(
      `phase 4: API down ${upAt - downAt} ms; ${outage.filter((s) => s.status !== 200).length}/${outage.length} failed; new pod served after ${afterRestartMs} ms`,
    );

    streaming = false;
    await stream;
    if (!router.isRunning()) throw new Error('router exited');
    return {
      scaleUpMs: Math.max(...perEngine),
      scaleUpPerEngineMs: perEngine,
      stopPicksMs,
      inflightAtDelete,
      inflightFailed,
      failedDuringOutage: outage.filter((s) => s.status !== 200).length,
      requestsDuringOutage: outage.length,
      afterRestartMs,
      apiDownMs: upAt - downAt,
      totalRequests: samples.length,
      failedRequests: samples.filter((s) => s.status !== 200).length,
    };
  } finally {
    streaming = false;
    await stream.catch(() => {});
    await envoy?.stop();
    await router?.stop();
    await Promise.all(fleets.map((f) => f.stop()));
    await cluster?.stop();
  }
}
