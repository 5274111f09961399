/**
 * The process harness for e2e tests, the demo and benchmarks: real sim engines, the real
 * router (`node dist/src/main.js serve`) and real Envoys, on loopback with ephemeral ports,
 * each with readiness waits, logs under .run/<run>/ and guaranteed cleanup (stop(), and a
 * kill of every child when this process exits or is interrupted).
 *
 *   const stack = await startStack({ engines: { count: 4 }, envoys: [{ variant: 'override-host' }] });
 *   await postJson(`${stack.envoys[0].url}/v1/chat/completions`, body);
 *   await stack.stop();
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startSimEngines, type SimEngineFleet, type SimEngineInfo, type StartSimEnginesOptions } from './sim-engines.js';
import { usesRouter } from './envoy-config.js';
import { startEnvoy, type EnvoyProcess, type StartEnvoyOptions } from './envoy-process.js';
import { httpRequest, isHttpOk } from './http-client.js';
import { runDir, startProcess, type ManagedProcess } from './managed-process.js';
import { ROUTER_MAIN } from './repo-paths.js';

export { startEnvoy, type EnvoyProcess, type StartEnvoyOptions } from './envoy-process.js';
export { freePort, killAllManagedProcesses, runDir, sleep, startProcess, type ManagedProcess } from './managed-process.js';
export type { SimEngineFleet, SimEngineInfo, StartSimEnginesOptions } from './sim-engines.js';

/** Starts sim engines (test/kit/sim-engines.ts); each response carries `x-engine-id`. */
export function startEngines(opts: StartSimEnginesOptions): Promise<SimEngineFleet> {
  return startSimEngines(opts);
}

// ---------------------------------------------------------------------------------------
// Router

export type ConfigDoc = Record<string, unknown>;

function isPlainObject(v: unknown): v is ConfigDoc {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge for config documents: mappings merge, everything else (lists too) replaces. */
export function mergeDoc(base: ConfigDoc, over: ConfigDoc | undefined): ConfigDoc {
  if (!over) return base;
  const out: ConfigDoc = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const cur = out[k];
    out[k] = isPlainObject(cur) && isPlainObject(v) ? mergeDoc(cur, v) : v;
  }
  return out;
}

/**
 * A router config document for a harness run: the given engines, ephemeral ext_proc and
 * admin ports, warn-level logs; `overrides` is merged on top (see docs/configuration.md).
 */
export function routerConfigDoc(engines: readonly string[], overrides?: ConfigDoc): ConfigDoc {
  const base: ConfigDoc = {
    apiVersion: 'cacheroute/v1',
    server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0', drainTimeoutMs: 2000 },
    endpoints: engines.map((address) => ({ address })),
    telemetry: { logLevel: 'warn' },
  };
  return mergeDoc(base, overrides);
}

export interface StartRouterOptions {
  /** Full config document (see routerConfigDoc). */
  readonly config: ConfigDoc;
  readonly name?: string;
  /** Extra environment (merged over process.env). */
  readonly env?: NodeJS.ProcessEnv;
  readonly readyTimeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Router entry script (default: this checkout's dist/src/main.js), e.g. another checkout's build to compare. */
  readonly main?: string;
}

export interface RouterProcess extends ManagedProcess {
  /** ext_proc gRPC address `host:port` (what Envoy's cacheroute_extproc cluster points to). */
  readonly grpcAddress: string;
  /** e.g. http://127.0.0.1:40123 — /healthz, /readyz, /metrics, /debug/... */
  readonly adminUrl: string;
  readonly configFile: string;
  /** The router's Prometheus text. */
  metrics(): Promise<string>;
}

interface ListeningLine {
  event: 'listening';
  grpc: string;
  admin: string;
  grpcPort: number;
  adminPort: number;
}

function parseListening(line: string): ListeningLine | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const msg = JSON.parse(line) as Partial<ListeningLine>;
    if (msg.event === 'listening' && typeof msg.grpc === 'string' && typeof msg.admin === 'string') {
      return msg as ListeningLine;
    }
  } catch {
    // not a JSON line
  }
  return undefined;
}

let routerCount = 0;

/** Runs `node dist/src/main.js serve --config <generated yaml>`; ready on its `listening` line. */
export async function startRouter(opts: StartRouterOptions): Promise<RouterProcess> {
  routerCount += 1;
  const name = opts.name ?? 'router';
  const configFile = join(runDir(), `${name}-${routerCount}.yaml`);
  writeFileSync(configFile, stringify(opts.config));
  const proc = await startProcess({
    name,
    command: process.execPath,
    args: [opts.main ?? ROUTER_MAIN, 'serve', '--config', configFile],
    env: { ...process.env, ...opts.env },
    readyLine: (line) => parseListening(line) !== undefined,
    readyTimeoutMs: opts.readyTimeoutMs ?? 20_000,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const listening = parseListening(proc.readyLine ?? '');
  if (!listening) {
    await proc.stop();
    throw new Error(`${name}: no listening line (log: ${proc.logFile})`);
  }
  const adminUrl = `http://${listening.admin}`;
  if (!(await isHttpOk(`${adminUrl}/healthz`, 2000))) {
    await proc.stop();
    throw new Error(`${name}: /healthz not OK after the listening line (log: ${proc.logFile})`);
  }
  return {
    name: proc.name,
    pid: proc.pid,
    logFile: proc.logFile,
    readyLine: proc.readyLine,
    exited: proc.exited,
    isRunning: proc.isRunning,
    tail: proc.tail,
    stop: proc.stop,
    grpcAddress: listening.grpc,
    adminUrl,
    configFile,
    metrics: async () => (await httpRequest(`${adminUrl}/metrics`, { timeoutMs: 5000 })).text(),
  };
}

// ---------------------------------------------------------------------------------------
// Whole stack

export type StackEnvoyOptions = Omit<StartEnvoyOptions, 'engines' | 'routerAddress'>;

export interface StackOptions {
  readonly engines: StartSimEnginesOptions;
  /** Router config overrides (merged over routerConfigDoc); `false` = no router. */
  readonly router?: { readonly config?: ConfigDoc; readonly name?: string } | false;
  /** Envoys to start in front (engines and router address are filled in). */
  readonly envoys?: readonly StackEnvoyOptions[];
  readonly signal?: AbortSignal;
}

export interface Stack {
  readonly engines: readonly SimEngineInfo[];
  readonly fleet: SimEngineFleet;
  readonly router?: RouterProcess;
  readonly envoys: readonly EnvoyProcess[];
  /** `ip:port` of every engine, in order (the form Envoy and the router use). */
  readonly engineAddresses: readonly string[];
  /** Stops Envoys, then the router, then the engines. Idempotent. */
  stop(): Promise<void>;
}

export function engineAddress(e: SimEngineInfo): string {
  return e.host.includes(':') ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`;
}

export async function startStack(opts: StackOptions): Promise<Stack> {
  const fleet = await startEngines(opts.engines);
  const engineAddresses = fleet.engines.map(engineAddress);
  let router: RouterProcess | undefined;
  const envoys: EnvoyProcess[] = [];
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      await Promise.all(envoys.map((e) => e.stop()));
      await router?.stop();
      await fleet.stop();
    })();
    return stopped;
  };
  try {
    if (opts.router !== false) {
      router = await startRouter({
        config: routerConfigDoc(engineAddresses, opts.router?.config),
        ...(opts.router?.name ? { name: opts.router.name } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
    }
    for (const e of opts.envoys ?? []) {
      envoys.push(
        await startEnvoy({
          ...e,
          engines: engineAddresses,
          ...(router && usesRouter(e.variant) ? { routerAddress: router.grpcAddress } : {}),
          ...(opts.signal && !e.signal ? { signal: opts.signal } : {}),
        }),
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { engines: fleet.engines, fleet, ...(router ? { router } : {}), envoys, engineAddresses, stop };
}
