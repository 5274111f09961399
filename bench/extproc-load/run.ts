/**
 * ext_proc load benchmark: how many Envoy-like streams per second one router process
 * handles on one core, and the per-stream latency it adds.
 *
 *   npm run build && npm run bench -- extproc-load [--duration-s 10] [--warmup-s 3]
 *       [--concurrency 64] [--connections 2] [--strategy cache-aware] [--endpoints 8]
 *       [--no-pin] [--label text] [--close reset|half-close] [--router-dir DIR]
 *       [--out bench/results/extproc-load]
 *       [--server-node-arg=--cpu-prof --server-node-arg=--cpu-prof-dir=/tmp/prof]
 *
 * The router runs as the real CLI (`cacheroute serve`; of another built checkout with
 * --router-dir, e.g. a baseline commit) in a child process pinned to CPU 1
 * with taskset; this client pins itself to CPU 0, so client and server do not compete for
 * a core. Bounded: duration ≤ 120 s. Writes <out>/<stamp>.json and .md plus latest.{json,md}.
 * The machine is shared: numbers vary run to run; the report records load average and CPU use.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chatBodies } from './chat-bodies.js';
import { runLoad, verifyOnce } from './load-client.js';
import type { LoadResult } from './load-client.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** utime+stime of a process in seconds (Linux /proc). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // fields 14 and 15 of stat(5)
  return ticks / 100; // CLK_TCK is 100 on Linux
}

function gitInfo(dir: string): { commit: string; dirty: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'proto'], { cwd: dir, encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: true };
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'duration-s': { type: 'string', default: '10' },
      'warmup-s': { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '64' },
      connections: { type: 'string', default: '2' },
      strategy: { type: 'string', default: 'cache-aware' },
      endpoints: { type: 'string', default: '8' },
      'no-pin': { type: 'boolean', default: false },
      label: { type: 'string', default: '' },
      close: { type: 'string', default: 'reset' },
      // A built checkout whose dist/src/main.js serves (default: this one).
      'router-dir': { type: 'string', default: REPO },
      // server.responseCompletion for the router (e.g. ext-proc: it then also answers response
      // headers, like a build from before the access-log path); default: the build's own default.
      'response-completion': { type: 'string', default: '' },
      out: { type: 'string', default: 'bench/results/extproc-load' },
      // Extra Node.js flags for the router process, e.g. --server-node-arg=--cpu-prof.
      'server-node-arg': { type: 'string', multiple: true, default: [] },
    },
  });
  const durationS = Math.min(120, Math.max(1, Number(values['duration-s'])));
  const warmupS = Math.min(30, Math.max(0, Number(values['warmup-s'])));
  const concurrency = Math.max(1, Number(values.concurrency));
  const connections = Math.max(1, Number(values.connections));
  const endpointCount = Math.max(1, Number(values.endpoints));
  const pin = !values['no-pin'] && hasTaskset() && cpus().length >= 2;

  const dir = mkdtempSync(join(tmpdir(), 'cacheroute-load-'));
  const configPath = join(dir, 'router.yaml');
  // Loopback addresses that nothing listens on: engine metrics are off, nothing dials them.
  const endpoints = Array.from({ length: endpointCount }, (_, i) => `  - 127.0.1.${i + 1}:8000`).join('\n');
  const routerDir = resolve(values['router-dir']);
  const main = join(routerDir, 'dist/src/main.js');
  const configText =
    `apiVersion: cacheroute/v1\nserver:\n  grpcAddress: 127.0.0.1:0\n  adminAddress: 127.0.0.1:0\n  drainTimeoutMs: 2000\n` +
    (values['response-completion'] !== '' ? `  responseCompletion: ${values['response-completion']}\n` : '') +
    `strategy: ${values.strategy}\nendpoints:\n${endpoints}\nengineMetrics:\n  enabled: false\ntelemetry:\n  logLevel: error\n`;
  writeFileSync(configPath, configText);

  const cmd = pin ? 'taskset' : process.execPath;
  const nodeArgs = values['server-node-arg'] ?? [];
  const serveArgs = [...nodeArgs, main, 'serve', '--config', configPath];
  const args = pin ? ['-c', '1', process.execPath, ...serveArgs] : serveArgs;
  const server = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, OTEL_SDK_DISABLED: 'true' } });
  const exited = new Promise<number | null>((r) => server.on('exit', (c) => r(c)));
  try {
    const listening = await new Promise<{ grpc: string }>((resolveLine, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error('router did not print its listening line within 15 s')), 15_000);
      server.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        for (const line of buf.split('\n')) {
          if (line.includes('"event":"listening"')) {
            clearTimeout(timer);
            resolveLine(JSON.parse(line) as { grpc: string });
          }
        }
      });
      server.on('exit', (c) => reject(new Error(`router exited early (${c})`)));
    });
    if (pin) execFileSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });

    const bodies = chatBodies(512, 1);
    const firstPick = await verifyOnce(listening.grpc, bodies[0]!);
    const loadBefore = loadavg();
    const cpu: { start?: number; end?: number } = {};
    const clientCpu: { start?: NodeJS.CpuUsage; end?: NodeJS.CpuUsage } = {};
    const startTimer = setTimeout(() => {
      cpu.start = cpuSeconds(server.pid!);
      clientCpu.start = process.cpuUsage();
    }, warmupS * 1000);
    const endTimer = setTimeout(
      () => {
        cpu.end = cpuSeconds(server.pid!);
        clientCpu.end = process.cpuUsage(clientCpu.start);
      },
      (warmupS + durationS) * 1000,
    );
    const result: LoadResult = await runLoad({
      address: listening.grpc,
      concurrency,
      connections,
      warmupMs: warmupS * 1000,
      durationMs: durationS * 1000,
      bodies,
      close: values.close === 'half-close' ? 'half-close' : 'reset',
    });
    clearTimeout(startTimer);
    clearTimeout(endTimer);
    // The server PID is taskset's exec'd node (taskset execs in place).
    const serverCores = cpu.start !== undefined && cpu.end !== undefined ? (cpu.end - cpu.start) / durationS : undefined;
    const clientCores = clientCpu.end ? (clientCpu.end.user + clientCpu.end.system) / 1e6 / durationS : undefined;
    const git = gitInfo(routerDir);
    const bodyBytes = bodies.reduce((a, b) => a + b.length, 0) / bodies.length;
    const report = {
      benchmark: 'extproc-load',
      date: new Date().toISOString(),
      git,
      label: values.label,
      machine: {
        cpus: cpus().length,
        model: cpus()[0]?.model ?? 'unknown',
        node: process.version,
        loadavg1mBefore: loadBefore[0],
        shared: true,
      },
      setup: {
        pinned: pin,
        serverCpu: pin ? 1 : 'unpinned',
        clientCpu: pin ? 0 : 'unpinned',
        concurrency,
        connections,
        warmupS,
        durationS,
        strategy: values.strategy,
        endpoints: endpointCount,
        meanBodyBytes: Math.round(bodyBytes),
        stream: `request_headers(FDS) + 1 request_body chunk (eos) + response_headers, then ${values.close === 'half-close' ? 'half-close (Envoy ext_proc_graceful_grpc_close)' : 'RST_STREAM (Envoy default)'}`,
        telemetry: 'default (metrics on, tracing off)',
        transport: `cacheroute serve from ${routerDir}`,
        routerConfig: configText,
      },
      firstPick,
      result: {
        ...result,
        serverCpuCores: serverCores,
        clientCpuCores: clientCores,
        streamsPerServerCpuSecond: serverCores ? result.streamsPerSecond / serverCores : undefined,
        serverCpuMicrosPerStream: serverCores && result.streams ? (serverCores * durationS * 1e6) / result.streams : undefined,
      },
    };
    const outDir = resolve(REPO, values.out);
    mkdirSync(outDir, { recursive: true });
    const stamp = report.date.replace(/[:.]/g, '-');
    const json = JSON.stringify(report, null, 2) + '\n';
    const md = markdown(report);
    writeFileSync(join(outDir, `${stamp}.json`), json);
    writeFileSync(join(outDir, `${stamp}.md`), md);
    writeFileSync(join(outDir, 'latest.json'), json);
    writeFileSync(join(outDir, 'latest.md'), md);
    process.stdout.write(md);
    return result.errors === 0 ? 0 : 1;
  } finally {
    server.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (server.exitCode === null) server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

type Report = {
  date: string;
  git: { commit: string; dirty: boolean };
  label: string;
  machine: { cpus: number; model: string; node: string; loadavg1mBefore: number | undefined };
  setup: Record<string, unknown> & { routerConfig: string };
  firstPick: string;
  result: LoadResult & {
    serverCpuCores: number | undefined;
    clientCpuCores: number | undefined;
    streamsPerServerCpuSecond: number | undefined;
    serverCpuMicrosPerStream: number | undefined;
  };
};

function f(n: number | undefined, digits = 1): string {
  return n === undefined ? 'n/a' : n.toFixed(digits);
}

function markdown(r: Report): string {
  const res = r.result;
  const s = r.setup;
  return `# ext_proc load — ${r.date}

Commit \`${r.git.commit.slice(0, 12)}\`${r.git.dirty ? ' (with uncommitted changes)' : ''}${r.label ? ` — ${r.label}` : ''}.
Machine: ${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}, 1-min load average before the run ${f(r.machine.loadavg1mBefore, 2)}.
**Shared, noisy machine** (other engineers build and test on it): treat numbers as indicative.

| setting | value |
|---|---|
| router | ${s['transport'] ?? 'cacheroute serve'} child process, ${s['pinned'] ? 'pinned to CPU 1 (taskset)' : 'not pinned'} |
| client | this process${s['pinned'] ? ', pinned to CPU 0' : ''} (raw node:http2, pre-encoded gRPC frames); ${s['connections']} HTTP/2 connections (${res.connectionsOpened} opened in total), ${s['concurrency']} concurrent streams |
| stream | ${s['stream']} |
| bodies | 512 seeded chat bodies, mean ${s['meanBodyBytes']} B, 8 shared system prompts |
| strategy | ${s['strategy']} over ${s['endpoints']} endpoints (no engine metrics), ${s['telemetry']} |
| window | ${s['warmupS']} s warm-up, ${s['durationS']} s measured |

| result | value |
|---|---|
| streams | ${res.streams} (${res.errors} errors${res.refused > 0 ? `, ${res.refused} of them refused before any answer` : ''}) |
| **streams/s** | **${f(res.streamsPerSecond, 0)}** |
| router CPU | ${f(res.serverCpuCores, 2)} cores; ${f(res.serverCpuMicrosPerStream, 0)} µs CPU per stream → ${f(res.streamsPerServerCpuSecond, 0)} streams per router CPU-second |
| client CPU | ${f(res.clientCpuCores, 2)} cores |
| latency p50 / p90 / p99 / max | ${f(res.latencyMs.p50, 2)} / ${f(res.latencyMs.p90, 2)} / ${f(res.latencyMs.p99, 2)} / ${f(res.latencyMs.max, 1)} ms |
${res.errorSamples.length ? `\nErrors (first few): ${res.errorSamples.map((e) => `\`${e}\``).join(', ')}\n` : ''}
Latency is per stream, from opening it to the third answer (headers answer with the decision, body echo, response-headers answer), with ${s['concurrency']} streams in flight.
`;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
