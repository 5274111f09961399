/**
 * A prefill/decode fleet for e2e tests and the P/D preset: prefill engines, decode engines
 * each behind its own `cacheroute pd-sidecar` process, the router configured from
 * examples/router-pd.yaml (its plugin graph, with these engines and the given handler
 * parameters), and Envoy in front with every endpoint (prefill engines and sidecars) in its
 * engine cluster. Engines are whatever the caller started (simulated or real vLLM); this
 * file only adds the sidecars, the router and Envoy.
 *
 *   const pd = await startPdStack({ prefill: ['127.0.0.1:9001'], decode: ['127.0.0.1:9002'], connector: 'nixl' });
 *   await postJson(`${pd.envoy.url}/v1/completions`, body);
 *   await pd.stop();
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startEnvoy, type EnvoyProcess } from './envoy-process.js';
import { startProcess, type ManagedProcess } from './managed-process.js';
import { mergeDoc, routerConfigDoc, startRouter, type ConfigDoc, type RouterProcess } from './processes.js';
import { REPO_ROOT, ROUTER_MAIN } from './repo-paths.js';

export interface PdSidecarProcess extends ManagedProcess {
  /** `127.0.0.1:<port>`: the decode endpoint the router and Envoy see. */
  readonly address: string;
  /** The decode engine behind it. */
  readonly decode: string;
}

/** Runs `cacheroute pd-sidecar` in front of one decode engine; ready on its listening line. */
export async function startPdSidecar(
  decode: string,
  connector: 'nixl' | 'shared-store',
  extraArgs: readonly string[] = [],
): Promise<PdSidecarProcess> {
  const proc = await startProcess({
    name: 'pd-sidecar',
    command: process.execPath,
    args: [ROUTER_MAIN, 'pd-sidecar', '--listen', '127.0.0.1:0', '--decode', decode, '--connector', connector, ...extraArgs],
    readyLine: (line) => line.startsWith('{"event":"listening"'),
  });
  const port = (JSON.parse(proc.readyLine ?? '{}') as { port?: number }).port;
  if (typeof port !== 'number') {
    await proc.stop();
    throw new Error(`pd-sidecar: no listening line (log: ${proc.logFile})`);
  }
  return { ...proc, address: `127.0.0.1:${port}`, decode };
}

/** examples/router-pd.yaml with these endpoints and handler parameters, as a harness router document. */
export function pdRouterConfig(
  prefill: readonly string[],
  decodeEndpoints: readonly string[],
  handler: Record<string, unknown> = {},
  over?: ConfigDoc,
): ConfigDoc {
  const example = parse(readFileSync(join(REPO_ROOT, 'examples', 'router-pd.yaml'), 'utf8')) as ConfigDoc;
  const plugins = (example['plugins'] as { type: string; parameters?: Record<string, unknown> }[]).map((p) =>
    p.type === 'disagg-profile-handler' ? { ...p, parameters: { ...p.parameters, ...handler } } : p,
  );
  const endpoints = [
    ...prefill.map((address) => ({ address, role: 'prefill' })),
    ...decodeEndpoints.map((address) => ({ address, role: 'decode' })),
  ];
  return mergeDoc(routerConfigDoc([], { ...example, plugins, endpoints }), over);
}

export interface PdStackOptions {
  readonly prefill: readonly string[];
  readonly decode: readonly string[];
  readonly connector: 'nixl' | 'shared-store';
  /** disagg-profile-handler parameters over the example's (e.g. `{ split: 'always' }`). */
  readonly handler?: Record<string, unknown>;
  /** Router document overrides. */
  readonly router?: ConfigDoc;
  /** Extra pd-sidecar arguments (e.g. `--prefill-timeout-ms 2000`). */
  readonly sidecarArgs?: readonly string[];
}

export interface PdStack {
  readonly sidecars: readonly PdSidecarProcess[];
  readonly router: RouterProcess;
  readonly envoy: EnvoyProcess;
  stop(): Promise<void>;
}

export async function startPdStack(opts: PdStackOptions): Promise<PdStack> {
  const sidecars: PdSidecarProcess[] = [];
  let router: RouterProcess | undefined;
  let envoy: EnvoyProcess | undefined;
  const stop = async (): Promise<void> => {
    await envoy?.stop();
    await router?.stop();
    await Promise.all(sidecars.map((s) => s.stop()));
  };
  try {
    for (const d of opts.decode) sidecars.push(await startPdSidecar(d, opts.connector, opts.sidecarArgs));
    const decodeEndpoints = sidecars.map((s) => s.address);
    router = await startRouter({ name: 'router-pd', config: pdRouterConfig(opts.prefill, decodeEndpoints, opts.handler, opts.router) });
    envoy = await startEnvoy({
      variant: 'override-host',
      engines: [...opts.prefill, ...decodeEndpoints],
      routerAddress: router.grpcAddress,
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { sidecars, router, envoy, stop };
}
