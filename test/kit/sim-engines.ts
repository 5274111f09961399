/**
 * Starts simulated engines as child processes for tests, the demo and benchmarks:
 *
 *   const fleet = await startSimEngines({ count: 4, flags: { 'time-scale': 0.1 } });
 *   ... fleet.engines[i].url / .id / .port / .pid ...
 *   await fleet.stop();
 *
 * Each child runs `node dist/bench/sim-engine/main.js` and is ready once it prints its
 * listening line. Children are given --exit-on-stdin-close, so they exit even if this
 * process dies without cleaning up (stdin pipe closes); stop() and process exit also
 * kill them explicitly. `enginesPerProcess` > 1 packs several engines into one process
 * (--ports), which keeps 16-engine fleets light on a small machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './repo-paths.js';

/** The compiled engine simulator (bench/sim-engine/main.ts). */
export const SIM_ENGINE_MAIN: string = join(REPO_ROOT, 'dist', 'bench', 'sim-engine', 'main.js');

export type SimEngineFlags = readonly string[] | Readonly<Record<string, string | number | boolean>>;

export interface StartSimEnginesOptions {
  readonly count: number;
  /** First port; engines get basePort, basePort+1, ... 0 (default) = ephemeral ports. */
  readonly basePort?: number;
  /** Flags for every engine: argv strings or { 'time-scale': 0.1, 'strict-model': true }. */
  readonly flags?: SimEngineFlags;
  /** Extra flags for engine i (e.g. a different --kv-cache-blocks); only with enginesPerProcess = 1. */
  readonly engineFlags?: (index: number) => SimEngineFlags;
  /** Engines hosted per child process (default 1). */
  readonly enginesPerProcess?: number;
  /** Max wait for every engine to listen (default 15 s). */
  readonly startTimeoutMs?: number;
  /** Host to bind (default 127.0.0.1). */
  readonly host?: string;
  /** Forward children's stderr to this process's stderr (default false: kept for error messages only). */
  readonly inheritStderr?: boolean;
  /** Script to run (default: main.js next to this file). */
  readonly mainScript?: string;
}

export interface SimEngineInfo {
  /** x-engine-id of the engine (default `<host>:<port>`). */
  readonly id: string;
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly pid: number;
}

export interface SimEngineFleet {
  readonly engines: readonly SimEngineInfo[];
  /** SIGTERM every child, SIGKILL after a grace period; resolves when all exited. Idempotent. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of live) {
      try {
        c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

export function flagsToArgv(flags: SimEngineFlags | undefined): string[] {
  if (!flags) return [];
  if (Array.isArray(flags)) return [...(flags as readonly string[])];
  const out: string[] = [];
  for (const [k, v] of Object.entries(flags as Record<string, string | number | boolean>)) {
    const name = k.startsWith('--') ? k : `--${k}`;
    if (v === true) out.push(name);
    else if (v === false) out.push(`${name}=false`);
    else out.push(`${name}=${String(v)}`);
  }
  return out;
}

interface ListeningLine {
  event: 'listening';
  port: number;
  id: string;
  url: string;
}

export async function startSimEngines(opts: StartSimEnginesOptions): Promise<SimEngineFleet> {
  const count = opts.count;
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be an integer >= 1, got ${count}`);
  const perProc = Math.max(1, Math.floor(opts.enginesPerProcess ?? 1));
  if (perProc > 1 && opts.engineFlags) throw new RangeError('engineFlags requires enginesPerProcess = 1');
  const basePort = opts.basePort ?? 0;
  const host = opts.host ?? '127.0.0.1';
  const timeoutMs = opts.startTimeoutMs ?? 15_000;
  const script = opts.mainScript ?? SIM_ENGINE_MAIN;
  installExitHook();

  const children: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(children.map((c) => killChild(c, 3_000)));
  };

  const launches: Promise<SimEngineInfo[]>[] = [];
  for (let first = 0; first < count; first += perProc) {
    const n = Math.min(perProc, count - first);
    const ports = Array.from({ length: n }, (_, k) => (basePort === 0 ? 0 : basePort + first + k));
    const argv = [
      script,
      ...(n === 1 ? [`--port=${ports[0]}`] : [`--ports=${ports.join(',')}`]),
      `--host=${host}`,
      `--seed=${first}`,
      '--exit-on-stdin-close',
      ...flagsToArgv(opts.flags),
      ...(opts.engineFlags ? flagsToArgv(opts.engineFlags(first)) : []),
    ];
    const child = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', opts.inheritStderr ? 'inherit' : 'pipe'] });
    children.push(child);
    live.add(child);
    child.once('exit', () => live.delete(child));
    launches.push(waitListening(child, n, timeoutMs, argv));
  }

  try {
    const groups = await Promise.all(launches);
    return { engines: groups.flat(), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function waitListening(child: ChildProcess, expected: number, timeoutMs: number, argv: readonly string[]): Promise<SimEngineInfo[]> {
  return new Promise((resolve, reject) => {
    const found: SimEngineInfo[] = [];
    let stderrTail = '';
    let buf = '';
    let done = false;
    const finish = (err?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(found);
    };
    const timer = setTimeout(
      () => finish(new Error(`sim engine did not listen within ${timeoutMs} ms (${argv.slice(1).join(' ')}): ${stderrTail.trim()}`)),
      timeoutMs,
    );
    child.stderr?.on('data', (d: Buffer) => {
      stderrTail = (stderrTail + d.toString('utf8')).slice(-2000);
    });
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        try {
          const msg = JSON.parse(line) as Partial<ListeningLine>;
          if (msg.event === 'listening' && typeof msg.port === 'number' && typeof msg.id === 'string' && typeof msg.url === 'string') {
            const host = new URL(msg.url).hostname.replace(/^\[|\]$/g, '');
            found.push({ id: msg.id, url: msg.url, host, port: msg.port, pid: child.pid ?? -1 });
            if (found.length === expected) finish();
          }
        } catch {
          // not our line
        }
      }
    });
    child.once('error', (err) => finish(err));
    child.once('exit', (code, signal) =>
      finish(new Error(`sim engine exited early (code ${code}, signal ${signal}): ${stderrTail.trim()}`)),
    );
  });
}

function killChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      live.delete(child);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
