/**
 * A real nats-server (the binary scripts put in .bin/) with JetStream on, for benchmarks
 * and tests of router replication: loopback only, fixed ports chosen once, so a stopped
 * server can be started again where its clients expect it, with the same JetStream store
 * (what a restarted broker finds on disk). Ready when its monitor answers /healthz.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { isHttpOk } from './http-client.js';
import { freePort, runDir, startProcess, type ManagedProcess } from './managed-process.js';
import { REPO_ROOT } from './repo-paths.js';

export const NATS_SERVER_BIN = join(REPO_ROOT, '.bin', 'nats-server');

export interface NatsServer {
  /** nats://127.0.0.1:port (what the routers' NATS client connects to). */
  readonly url: string;
  readonly port: number;
  /** http://127.0.0.1:port of its monitor (/healthz, /varz, /jsz). */
  readonly monitorUrl: string;
  readonly storeDir: string;
  isRunning(): boolean;
  /** Stops the server (SIGTERM, SIGKILL after 3 s); the store stays. Idempotent while stopped. */
  stop(): Promise<void>;
  /** Starts it again on the same ports and store; no-op while it runs. */
  start(): Promise<void>;
}

export interface StartNatsOptions {
  readonly name?: string;
  /** JetStream store directory; default a fresh one under the run directory. */
  readonly storeDir?: string;
  /**
   * A nats.conf to run (e.g. the one a chart renders): its settings apply, its jetstream block
   * included (point its store_dir at `storeDir`), except address, ports and server name, which
   * the flags here override (loopback).
   */
  readonly configFile?: string;
  /** Environment for the server (variables the config file references). */
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
}

let natsCount = 0;

export async function startNatsServer(opts: StartNatsOptions = {}): Promise<NatsServer> {
  if (!existsSync(NATS_SERVER_BIN)) throw new Error(`nats-server not found at ${NATS_SERVER_BIN} (run scripts/setup.sh)`);
  natsCount += 1;
  const name = opts.name ?? `nats-${natsCount}`;
  const storeDir = opts.storeDir ?? join(runDir(), `${name}-store`);
  mkdirSync(storeDir, { recursive: true });
  let port = await freePort();
  let monitorPort = await freePort();
  let proc: ManagedProcess | undefined;
  const start = async (): Promise<void> => {
    if (proc?.isRunning()) return;
    proc = await startProcess({
      name,
      command: NATS_SERVER_BIN,
      args: [
        ...(opts.configFile !== undefined ? ['-c', opts.configFile] : []),
        '-a',
        '127.0.0.1',
        '-p',
        String(port),
        '-m',
        String(monitorPort),
        // A config file brings its own jetstream block (nats-server refuses a second store_dir).
        ...(opts.configFile === undefined ? ['-js', '-sd', storeDir] : []),
        '-n',
        name,
      ],
      readyProbe: () => isHttpOk(`http://127.0.0.1:${monitorPort}/healthz`, 500),
      readyTimeoutMs: 15_000,
      ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  };
  // A free port can be taken by another process before nats-server binds it (tests run side
  // by side): the first start retries on fresh ports; later starts keep them.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('address already in use')) throw err;
      port = await freePort();
      monitorPort = await freePort();
    }
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorUrl: `http://127.0.0.1:${monitorPort}`,
    storeDir,
    isRunning: () => proc?.isRunning() ?? false,
    stop: async () => {
      if (proc?.isRunning()) await proc.stop({ graceMs: 3000 });
    },
    start,
  };
}
