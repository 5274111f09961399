/**
 * The cacheroute contender: N router processes (each on its own ext_proc and admin port,
 * fixed for the run so a killed replica comes back where Envoy expects it), optionally a
 * nats-server they share state through, and one real Envoy whose ext_proc cluster lists
 * every replica. The returned ReplicaSet lets a fault script SIGKILL and restart
 * replicas and stop and start NATS in the middle of a run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEnvoy, type EnvoyProcess } from '../../test/kit/envoy-process.js';
import { freePort, runDir, startProcess, type ManagedProcess } from '../../test/kit/managed-process.js';
import { startNatsServer, type NatsServer } from '../../test/kit/nats-process.js';
import { REPO_ROOT, ROUTER_MAIN } from '../../test/kit/repo-paths.js';
import { prepareBaseline } from '../bars/baseline-build.js';
import { deepMerge } from '../../src/util/deep-merge.js';
import { renderRouterConfig } from './router-config.js';
import type { ContenderContext, ContenderSpec, ReplicaSet, RouterOverrides, RunningContender } from './types.js';

type CacherouteSpec = Extract<ContenderSpec, { kind: 'cacheroute' }>;

/**
 * Router config that joins replica `name` to the NATS server at `url`: its identity (also
 * reported as `replica=` in the decision header) and the broker. The Envoy rendered here
 * gives every replica its own access logger (each receives every entry), so completion
 * forwarding, meant for one load-balanced log stream, is off: it would only send the owners
 * copies of entries they already have.
 */
export function replicationOverrides(url: string, name: string): RouterOverrides {
  return { replication: { enabled: true, replicaId: name, servers: [url], completions: { enabled: false } } };
}

interface Replica {
  readonly name: string;
  readonly configFile: string;
  readonly grpcAddress: string;
  readonly adminUrl: string;
  proc: ManagedProcess | undefined;
}

export async function startRouterReplicas(
  spec: CacherouteSpec,
  ctx: ContenderContext,
  configCounter: () => number,
): Promise<RunningContender> {
  const count = spec.replicas ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > 8) throw new Error(`${spec.label}: replicas must be 1..8, got ${count}`);
  // A checkout given as a commit is built under .run/ the first time (bench/bars/baseline-build.ts).
  const checkout =
    spec.checkout !== undefined
      ? prepareBaseline(spec.checkout, REPO_ROOT, (m) => process.stderr.write(`${spec.label}: ${m}\n`)).dir
      : undefined;
  const main = checkout !== undefined ? join(checkout, 'dist', 'src', 'main.js') : (spec.routerMain ?? ROUTER_MAIN);
  let nats: NatsServer | undefined;
  const replicas: Replica[] = [];
  let envoy: EnvoyProcess | undefined;
  const stop = async (): Promise<void> => {
    await envoy?.stop().catch(() => undefined);
    for (const r of [...replicas].reverse()) await r.proc?.stop().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
  };
  const launch = async (r: Replica): Promise<void> => {
    r.proc = await startProcess({
      name: `cacheroute-${spec.label}-${r.name}`,
      command: process.execPath,
      // BENCH_ROUTER_NODE_ARGS: extra node flags for the router processes (e.g. `--cpu-prof`).
      args: [...(process.env['BENCH_ROUTER_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''), main, 'serve', '--config', r.configFile],
      readyLine: (line) => line.includes('"listening"'),
      // Generous: on a loaded 2-core machine a cold start (module load, replay wait) can take long.
      readyTimeoutMs: 45_000,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
  };
  try {
    if (spec.replication === 'nats')
      nats = await startNatsServer({ name: `nats-${spec.label}`, ...(ctx.signal ? { signal: ctx.signal } : {}) });
    for (let i = 0; i < count; i++) {
      const name = `r${i}`;
      const grpcPort = await freePort();
      const adminPort = await freePort();
      let overrides: RouterOverrides = {};
      if (nats) overrides = deepMerge(overrides, replicationOverrides(nats.url, name));
      // Responses through the router again: it must expect response messages on the stream.
      if (spec.responsePath === 'ext-proc' && spec.routerPredatesResponseCompletion !== true)
        overrides = deepMerge(overrides, { server: { responseCompletion: 'ext-proc' } });
      if (spec.routerOverrides) overrides = deepMerge(overrides, spec.routerOverrides);
      const configFile = join(runDir(), `router-${spec.label}-${name}-${configCounter()}.yaml`);
      writeFileSync(
        configFile,
        renderRouterConfig({
          engines: ctx.engines,
          strategy: spec.strategy,
          seed: ctx.seed,
          grpcAddress: `127.0.0.1:${grpcPort}`,
          adminAddress: `127.0.0.1:${adminPort}`,
          overrides,
        }),
      );
      const r: Replica = {
        name,
        configFile,
        grpcAddress: `127.0.0.1:${grpcPort}`,
        adminUrl: `http://127.0.0.1:${adminPort}`,
        proc: undefined,
      };
      replicas.push(r);
    }
    // In parallel: each replica may wait for its index replay before it listens.
    const started = await Promise.allSettled(replicas.map((r) => launch(r)));
    const failed = started.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed) throw failed.reason;
    const variant = spec.envoyVariant ?? 'override-host';
    envoy = await startEnvoy({
      variant,
      name: `envoy-${spec.label}`,
      routerAddresses: replicas.map((r) => r.grpcAddress),
      engines: ctx.engines.map((e) => e.address),
      // Fail closed unless asked: a router failure must show up as failed requests, not as
      // silent fallback to Envoy's own balancing.
      failureModeAllow: spec.failOpen === true,
      ...(checkout !== undefined ? { sourceFile: join(checkout, 'envoy', `${variant}.yaml`) } : {}),
      ...(spec.responsePath ? { responsePath: spec.responsePath } : {}),
      ...(spec.requestBodyMode ? { requestBodyMode: spec.requestBodyMode } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const at = (i: number): Replica => {
    const r = replicas[i];
    if (r === undefined) throw new Error(`${spec.label}: no replica ${i}`);
    return r;
  };
  const set: ReplicaSet = {
    names: replicas.map((r) => r.name),
    adminUrl: (i) => at(i).adminUrl,
    isRunning: (i) => at(i).proc?.isRunning() ?? false,
    kill: async (i) => {
      await at(i).proc?.stop({ signal: 'SIGKILL', graceMs: 1000 });
    },
    restart: async (i) => {
      const r = at(i);
      if (r.proc?.isRunning()) return;
      await launch(r);
    },
    hasNats: nats !== undefined,
    stopNats: async () => {
      if (!nats) throw new Error(`${spec.label}: no nats-server in this contender`);
      await nats.stop();
    },
    startNats: async () => {
      if (!nats) throw new Error(`${spec.label}: no nats-server in this contender`);
      await nats.start();
    },
  };
  const first = replicas[0] as Replica;
  return {
    label: spec.label,
    baseUrl: envoy.url,
    routerMetricsUrl: `${first.adminUrl}/metrics`,
    notes: [
      `router configs ${replicas.map((r) => r.configFile).join(', ')}`,
      `envoy config ${envoy.configFile}`,
      ...(nats ? [`nats-server ${nats.url}, JetStream store ${nats.storeDir}`] : []),
    ],
    pids: [...replicas.map((r) => r.proc?.pid ?? -1), envoy.pid],
    replicaSet: set,
    stop,
  };
}
