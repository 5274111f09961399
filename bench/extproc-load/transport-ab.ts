/**
 * Side-by-side comparison of the two ext_proc transports (server.transport node-http2 vs
 * grpc-js) on the load benchmark: runs run.js alternately, transport by transport, for
 * each stream ending, several repetitions, so that machine drift hits both alike; reports
 * every run and the median CPU per stream with the ratio.
 *
 *   npm run build && node dist/bench/extproc-load/transport-ab.js [--reps 3] [--duration-s 10]
 *       [--close half-close,reset] [--out bench/results/extproc-load]
 *
 * Bounded: reps ≤ 10, each run ≤ 120 s. Writes <out>/transport-ab.{json,md}.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const RUN = fileURLToPath(new URL('./run.js', import.meta.url));
const TRANSPORTS = ['node-http2', 'grpc-js'] as const;

interface RunRow {
  readonly transport: string;
  readonly close: string;
  readonly rep: number;
  readonly streamsPerSecond: number;
  readonly errors: number;
  readonly streams: number;
  readonly serverCpuCores: number;
  readonly cpuMicrosPerStream: number;
  readonly streamsPerCpuSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly connectionsOpened: number;
  readonly commit: string;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      reps: { type: 'string', default: '3' },
      'duration-s': { type: 'string', default: '10' },
      close: { type: 'string', default: 'half-close,reset' },
      out: { type: 'string', default: 'bench/results/extproc-load' },
    },
  });
  const reps = Math.min(10, Math.max(1, Number(values.reps)));
  const duration = String(Math.min(120, Math.max(1, Number(values['duration-s']))));
  const closes = values.close.split(',').filter((c) => c === 'half-close' || c === 'reset');
  const tmp = mkdtempSync(join(tmpdir(), 'cacheroute-ab-'));
  const rows: RunRow[] = [];
  const loadBefore = loadavg();
  try {
    for (let rep = 1; rep <= reps; rep++) {
      for (const close of closes) {
        // Alternate the order each repetition so neither transport always runs first.
        const order = rep % 2 === 1 ? TRANSPORTS : [...TRANSPORTS].reverse();
        for (const transport of order) {
          const out = join(tmp, `${transport}-${close}-${rep}`);
          // run.js exits 1 when some streams failed; the report is written either way.
          const child = spawnSync(process.execPath, [RUN, '--transport', transport, '--close', close, '--duration-s', duration, '--out', out], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 200_000 });
          if (child.status !== 0 && child.status !== 1) throw new Error(`run.js ${transport} ${close} failed (status ${child.status}, signal ${child.signal})`);
          const r = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as {
            git: { commit: string };
            result: {
              streams: number;
              errors: number;
              streamsPerSecond: number;
              serverCpuCores: number;
              serverCpuMicrosPerStream: number;
              streamsPerServerCpuSecond: number;
              latencyMs: { p50: number; p99: number };
              connectionsOpened: number;
            };
          };
          const row: RunRow = {
            transport,
            close,
            rep,
            streamsPerSecond: r.result.streamsPerSecond,
            errors: r.result.errors,
            streams: r.result.streams,
            serverCpuCores: r.result.serverCpuCores,
            cpuMicrosPerStream: r.result.serverCpuMicrosPerStream,
            streamsPerCpuSecond: r.result.streamsPerServerCpuSecond,
            p50Ms: r.result.latencyMs.p50,
            p99Ms: r.result.latencyMs.p99,
            connectionsOpened: r.result.connectionsOpened,
            commit: r.git.commit,
          };
          rows.push(row);
          process.stderr.write(`${close} ${transport} rep ${rep}: ${row.cpuMicrosPerStream.toFixed(0)} µs/stream, ${row.streamsPerSecond.toFixed(0)} streams/s, ${row.errors} errors\n`);
        }
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  let dirty = true;
  try {
    dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bench/extproc-load'], { encoding: 'utf8' }).trim() !== '';
  } catch {
    /* not a git checkout */
  }
  const summary = closes.map((close) => {
    const per = (t: string): RunRow[] => rows.filter((r) => r.close === close && r.transport === t);
    const med = (t: string, f: (r: RunRow) => number): number => median(per(t).map(f));
    const cpu = Object.fromEntries(TRANSPORTS.map((t) => [t, med(t, (r) => r.cpuMicrosPerStream)]));
    return {
      close,
      medianCpuMicrosPerStream: cpu,
      medianStreamsPerCpuSecond: Object.fromEntries(TRANSPORTS.map((t) => [t, med(t, (r) => r.streamsPerCpuSecond)])),
      medianStreamsPerSecond: Object.fromEntries(TRANSPORTS.map((t) => [t, med(t, (r) => r.streamsPerSecond)])),
      errors: Object.fromEntries(TRANSPORTS.map((t) => [t, per(t).reduce((a, r) => a + r.errors, 0)])),
      streams: Object.fromEntries(TRANSPORTS.map((t) => [t, per(t).reduce((a, r) => a + r.streams, 0)])),
      cpuRatioNodeHttp2OverGrpcJs: cpu['node-http2']! / cpu['grpc-js']!,
    };
  });
  const result = { benchmark: 'extproc-load transport A/B', date: new Date().toISOString(), commit: rows[0]?.commit, dirty, loadavgBefore: loadBefore, loadavgAfter: loadavg(), reps, durationS: Number(duration), summary, runs: rows };
  mkdirSync(values.out, { recursive: true });
  writeFileSync(join(values.out, 'transport-ab.json'), JSON.stringify(result, null, 1) + '\n');
  const f0 = (x: number): string => x.toFixed(0);
  const md = [
    '# ext_proc transports side by side (node-http2 vs grpc-js)',
    '',
    `Commit \`${result.commit}\`${dirty ? ' (working tree had uncommitted changes under src/ or bench/extproc-load/)' : ''}; ${result.date}; load average before ${loadBefore.map((x) => x.toFixed(2)).join(' / ')}, after ${result.loadavgAfter.map((x) => x.toFixed(2)).join(' / ')}.`,
    `Each run: \`node dist/bench/extproc-load/run.js --transport T --close C --duration-s ${duration}\` (router pinned to CPU 1, client to CPU 0, 64 concurrent streams over 2 connections, cache-aware over 8 endpoints); ${reps} repetitions, transports alternated.`,
    '',
    '| stream ending | median CPU µs/stream node-http2 | grpc-js | ratio | streams per router CPU-second node-http2 | grpc-js | errors node-http2 | grpc-js |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...summary.map(
      (s) =>
        `| ${s.close} | ${f0(s.medianCpuMicrosPerStream['node-http2']!)} | ${f0(s.medianCpuMicrosPerStream['grpc-js']!)} | **${s.cpuRatioNodeHttp2OverGrpcJs.toFixed(2)}×** | ${f0(s.medianStreamsPerCpuSecond['node-http2']!)} | ${f0(s.medianStreamsPerCpuSecond['grpc-js']!)} | ${s.errors['node-http2']} of ${s.streams['node-http2']} | ${s.errors['grpc-js']} of ${s.streams['grpc-js']} |`,
    ),
    '',
    '| run | ending | transport | streams/s | router cores | CPU µs/stream | streams per CPU-s | p50 / p99 ms | errors | connections |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.rep} | ${r.close} | ${r.transport} | ${f0(r.streamsPerSecond)} | ${r.serverCpuCores.toFixed(2)} | ${f0(r.cpuMicrosPerStream)} | ${f0(r.streamsPerCpuSecond)} | ${r.p50Ms.toFixed(1)} / ${r.p99Ms.toFixed(1)} | ${r.errors} | ${r.connectionsOpened} |`,
    ),
    '',
  ].join('\n');
  writeFileSync(join(values.out, 'transport-ab.md'), md);
  process.stdout.write(md);
}

main();
