/**
 * A real nats-server with JetStream on loopback for tests and benchmarks of router
 * replication: ephemeral client port, its JetStream store under the run directory (kept
 * across `restart`, so a stream survives a server restart the way a deployed one does),
 * ready once the client port accepts connections and /healthz?js-enabled-only=true says OK.
 *
 *   const nats = await startNatsServer({ name: 'nats' });
 *   … config `replication.servers: [nats.url]` …
 *   await nats.stop();   await nats.restart();
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { httpRequest } from './http-client.js';
import { freePort, runDir, startProcess, type ManagedProcess } from './managed-process.js';
import { NATS_SERVER_BIN } from './repo-paths.js';

export interface StartNatsOptions {
  readonly name?: string;
  /** Client port (default: a free one). */
  readonly port?: number;
  readonly readyTimeoutMs?: number;
}

export interface NatsServerProcess {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** The running server process (undefined while stopped). */
  current(): ManagedProcess | undefined;
  isRunning(): boolean;
  /** Stops the server (SIGTERM, or `signal`); the store stays. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and store. */
  restart(): Promise<void>;
}

export async function startNatsServer(opts: StartNatsOptions = {}): Promise<NatsServerProcess> {
  const name = opts.name ?? 'nats';
  const port = opts.port ?? (await freePort());
  const monitorPort = await freePort();
  const storeDir = join(runDir(), `${name}-js-${port}`);
  mkdirSync(storeDir, { recursive: true });
  let proc: ManagedProcess | undefined;
  const launch = async (): Promise<void> => {
    proc = await startProcess({
      name,
      command: NATS_SERVER_BIN,
      args: ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', '-sd', storeDir, '--server_name', `${name}-${port}`],
      readyProbe: async () => {
        try {
          return (await httpRequest(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`, { timeoutMs: 1000 })).status === 200;
        } catch {
          return false;
        }
      },
      readyTimeoutMs: opts.readyTimeoutMs ?? 15_000,
    });
  };
  await launch();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    current: () => proc,
    isRunning: () => proc?.isRunning() ?? false,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      const p = proc;
      proc = undefined;
      await p?.stop({ signal, graceMs: 3000 });
    },
    async restart() {
      if (proc?.isRunning() === true) return;
      await launch();
    },
  };
}
