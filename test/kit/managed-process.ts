/**
 * Child processes for e2e tests, benchmarks and the demo: spawn, wait until ready, capture
 * output to a log file under .run/, stop (SIGTERM, then SIGKILL after a grace period).
 * Every live child is also killed when this process exits or gets SIGINT/SIGTERM/SIGHUP,
 * so a failed or interrupted test run leaves nothing behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { RUN_ROOT } from './repo-paths.js';

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface StartProcessOptions {
  /** Short name; used for the log file (`<run dir>/<name>.log`) and messages. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Ready once an output line (stdout or stderr) satisfies this. */
  readonly readyLine?: (line: string) => boolean;
  /** Ready once this resolves true (polled every 50 ms). Combined with readyLine: both. */
  readonly readyProbe?: () => Promise<boolean>;
  /** Give up (and kill the child) after this long; default 20 s. */
  readonly readyTimeoutMs?: number;
  /** Aborting kills the child. */
  readonly signal?: AbortSignal;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** The line that satisfied `readyLine`, if one was given. */
  readonly readyLine?: string;
  /** Resolves when the child has exited. */
  readonly exited: Promise<ExitInfo>;
  isRunning(): boolean;
  /** The last lines of output (for error messages). */
  tail(lines?: number): string;
  /** SIGTERM (or `signal`), then SIGKILL after `graceMs` (default 5 s). Idempotent. */
  stop(opts?: { signal?: NodeJS.Signals; graceMs?: number }): Promise<ExitInfo>;
}

const live = new Set<ChildProcess>();
let hooksInstalled = false;

function killAllNow(): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllNow);
  const signals: Array<[NodeJS.Signals, number]> = [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ];
  for (const [sig, code] of signals) {
    process.on(sig, () => {
      killAllNow();
      // Only take the process down if nobody else handles the signal.
      if (process.listenerCount(sig) <= 1) process.exit(code);
    });
  }
}

/** Kills every child started through this module right now (SIGKILL). */
export function killAllManagedProcesses(): void {
  killAllNow();
}

let runDirPath: string | undefined;

/** This process's run directory under .run/ (created on first use). */
export function runDir(): string {
  if (runDirPath === undefined) {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    runDirPath = join(RUN_ROOT, `${stamp}-${process.pid}`);
    mkdirSync(runDirPath, { recursive: true });
  }
  return runDirPath;
}

/** A TCP port that was free a moment ago on 127.0.0.1 (prefer port 0 where a process can report back). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const usedLogNames = new Set<string>();

function uniqueLogFile(name: string): string {
  let candidate = name;
  for (let i = 2; usedLogNames.has(candidate); i++) candidate = `${name}-${i}`;
  usedLogNames.add(candidate);
  return join(runDir(), `${candidate}.log`);
}

/** Spawns a child, captures its output and waits until it is ready. */
export async function startProcess(opts: StartProcessOptions): Promise<ManagedProcess> {
  installExitHooks();
  const logFile = uniqueLogFile(opts.name);
  const log: WriteStream = createWriteStream(logFile, { flags: 'a' });
  log.write(`# ${opts.command} ${opts.args.join(' ')}\n`);
  const child = spawn(opts.command, [...opts.args], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const recent: string[] = [];
  let readyLineSeen: string | undefined;
  let lineWaiter: ((line: string) => void) | undefined;

  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
    child.once('error', (err) => {
      live.delete(child);
      log.write(`# spawn error: ${err.message}\n`);
      resolve({ code: null, signal: null });
    });
  });
  void exited.then(() => log.end());

  const onOutput = (stream: NodeJS.ReadableStream): void => {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      if (!log.writableEnded) log.write(chunk);
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        recent.push(line);
        if (recent.length > 200) recent.shift();
        if (readyLineSeen === undefined && opts.readyLine?.(line)) {
          readyLineSeen = line;
          lineWaiter?.(line);
        }
      }
    });
  };
  if (child.stdout) onOutput(child.stdout);
  if (child.stderr) onOutput(child.stderr);

  let stopping: Promise<ExitInfo> | undefined;
  let running = true;
  void exited.then(() => {
    running = false;
  });
  const proc: ManagedProcess = {
    name: opts.name,
    pid: child.pid ?? -1,
    logFile,
    get readyLine() {
      return readyLineSeen;
    },
    exited,
    isRunning: () => running,
    tail: (n = 30) => recent.slice(-n).join('\n'),
    stop: (stopOpts) => {
      if (stopping !== undefined) return stopping;
      stopping = (async () => {
        if (!running) return exited;
        child.kill(stopOpts?.signal ?? 'SIGTERM');
        const grace = stopOpts?.graceMs ?? 5000;
        const timer = setTimeout(() => child.kill('SIGKILL'), grace);
        const info = await exited;
        clearTimeout(timer);
        return info;
      })();
      return stopping;
    },
  };

  const onAbort = (): void => void proc.stop({ graceMs: 1000 });
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  void exited.then(() => opts.signal?.removeEventListener('abort', onAbort));

  const timeoutMs = opts.readyTimeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  const fail = async (why: string): Promise<never> => {
    await proc.stop({ graceMs: 1000 });
    throw new Error(`${opts.name}: ${why} (log: ${logFile})\n${proc.tail(20)}`);
  };

  try {
    if (opts.readyLine && readyLineSeen === undefined) {
      const seen = new Promise<string>((resolve) => {
        lineWaiter = resolve;
      });
      const timer = new AbortController();
      const result = await Promise.race([
        seen.then(() => 'ready' as const),
        exited.then(() => 'exited' as const),
        sleep(timeoutMs, timer.signal).then(
          () => 'timeout' as const,
          () => 'ready' as const,
        ),
      ]);
      timer.abort();
      if (result === 'exited') return await fail('exited before becoming ready');
      if (result === 'timeout') return await fail(`not ready after ${timeoutMs} ms`);
    }
    if (opts.readyProbe) {
      for (;;) {
        if (!running) return await fail('exited before becoming ready');
        if (await opts.readyProbe().catch(() => false)) break;
        if (Date.now() > deadline) return await fail(`not ready after ${timeoutMs} ms`);
        await sleep(50);
      }
    }
  } catch (err) {
    await proc.stop({ graceMs: 1000 });
    throw err;
  }
  if (opts.signal?.aborted) return await fail('aborted');
  return proc;
}
