/**
 * Router CPU per routed request on the realistic path, for the two response paths of this
 * build side by side (issue 13's bar: the access-log path ≤ 0.5× the response path through
 * the router):
 *   npm run bench -- response-path [--out dir] [--reps 2] [--qps 8] [--seed 1]
 * `ext-proc`: response headers and bodies stream through the router (FULL_DUPLEX_STREAMED);
 * `access-log`: the shipped configs (the router sees the request only; Envoy's gRPC access
 * log ends each request). Same workload, engines and Envoy as the bars' realistic part
 * (bench/bars/run-bars.ts: the `peers` shape, 4 sim engines, streaming responses), in ABBA
 * order. Writes run.json, results.json and summary.md; raw records go to
 * bench/results/raw/response-path/ (not committed).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ContenderSpec } from '../contenders/types.js';
import { runPreset } from '../harness/run-preset.js';
import { PEERS } from '../presets/peers.js';
import type { PresetSpec } from '../presets/types.js';
import { portableString, writeJson } from '../report/result-files.js';
import { describeBuild } from './baseline-build.js';
import { realisticRunOf, type RealisticRun } from './run-bars.js';

const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
export const RESPONSE_PATH_BAR = 0.5;
type PathName = 'ext-proc' | 'access-log';

export function responsePathPreset(qps: number, reps: number): PresetSpec {
  const contenders: ContenderSpec[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    const order: PathName[] = rep % 2 === 1 ? ['ext-proc', 'access-log'] : ['access-log', 'ext-proc'];
    for (const path of order) {
      contenders.push({ kind: 'cacheroute', label: `${path}-${rep}`, strategy: 'cache-aware', responsePath: path });
    }
  }
  const base = PEERS.blocks[0]!;
  return {
    ...PEERS,
    name: 'response-path',
    description: `router CPU per request, responses through the router vs Envoy's access log: the peers workload through Envoy at ${qps} req/s`,
    estimatedMinutes: Math.ceil(contenders.length * 0.75),
    blocks: [{ ...base, name: 'realistic', qpsSweep: [qps], contenders, contenderMaxQps: {} }],
  };
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const f = (v: number | null | undefined, d = 1): string => (v === null || v === undefined || Number.isNaN(v) ? '—' : v.toFixed(d));

export async function runResponsePath(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      out: { type: 'string', default: join(REPO, 'bench', 'results', 'response-path') },
      reps: { type: 'string', default: '2' },
      qps: { type: 'string', default: '8' },
      seed: { type: 'string', default: '1' },
    },
  });
  const log = (m: string): void => void process.stderr.write(`${m}\n`);
  const reps = Math.min(4, Math.max(1, Number(values.reps)));
  const qps = Math.max(1, Number(values.qps));
  const seed = Number(values.seed);
  const startedAt = new Date().toISOString();
  const loadAvgAtStart = loadavg();
  const build = describeBuild(REPO);
  const results = await runPreset({
    preset: responsePathPreset(qps, reps),
    outDir: join(REPO, 'bench', 'results', 'raw', 'response-path'),
    repoRoot: REPO,
    seed,
    log,
    command: ['response-path'],
  });
  const runs: RealisticRun[] = results.map((r) => realisticRunOf(r, r.contender.label.replace(/-\d+$/, '')));
  const cpuOf = (p: PathName): number =>
    mean(runs.filter((r) => r.side === p && r.cpuMsPerRequest !== null).map((r) => r.cpuMsPerRequest!));
  const oldCpu = cpuOf('ext-proc');
  const newCpu = cpuOf('access-log');
  const ratio = newCpu / oldCpu;
  const run = {
    benchmark: 'response-path',
    command: `npm run bench -- response-path ${argv.join(' ')}`,
    startedAt,
    finishedAt: new Date().toISOString(),
    seed,
    config: { reps, qps, bar: RESPONSE_PATH_BAR },
    build,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      loadAvgAtStart,
      loadAvgAtEnd: loadavg(),
    },
  };
  const summary = { extProcCpuMsPerRequest: oldCpu, accessLogCpuMsPerRequest: newCpu, ratio, met: ratio <= RESPONSE_PATH_BAR };
  const lines = [
    "# Router CPU per routed request: responses through the router vs Envoy's access log",
    '',
    `Build \`${build.commit.slice(0, 12)}\`${build.dirty ? ' (uncommitted changes)' : ''}; ${run.startedAt} → ${run.finishedAt}; ${run.machine.cpus} × ${run.machine.cpuModel}; load average at start ${loadAvgAtStart.map((x) => x.toFixed(2)).join(' / ')}. The \`peers\` workload (4 sim engines, streaming responses, 32 output tokens) through the real Envoy (override-host) at ${qps} req/s, the two paths alternating (ABBA); router CPU from \`cacheroute_process_cpu_seconds_total\` over the measured run, per request sent.`,
    '',
    '| path | router CPU ms/request (mean) |',
    '| --- | --- |',
    `| ext-proc (response headers + bodies through the router) | ${f(oldCpu, 3)} |`,
    `| access-log (shipped) | ${f(newCpu, 3)} |`,
    `| ratio access-log ÷ ext-proc | ${f(ratio, 2)}× (bar ≤ ${RESPONSE_PATH_BAR}×: ${summary.met ? '**met**' : '**NOT met**'}) |`,
    '',
    '| run | CPU ms/request | requests | success | TTFT p50 / p99 ms | decision p99 µs |',
    '| --- | --- | --- | --- | --- | --- |',
    ...runs.map(
      (v) =>
        `| ${v.label} | ${f(v.cpuMsPerRequest, 3)} | ${v.requests} | ${v.successRate === null ? '—' : (v.successRate * 100).toFixed(1) + '%'} | ${f(v.ttftP50Ms, 0)} / ${f(v.ttftP99Ms, 0)} | ${f(v.decisionP99Us, 0)}${v.error ? ` (error: ${v.error})` : ''} |`,
    ),
    '',
  ];
  const outDir = resolve(values.out);
  mkdirSync(outDir, { recursive: true });
  writeJson(join(outDir, 'run.json'), run, REPO);
  writeJson(join(outDir, 'results.json'), { summary, runs }, REPO);
  writeFileSync(join(outDir, 'summary.md'), portableString(lines.join('\n'), REPO));
  process.stdout.write(lines.join('\n'));
  return 0;
}
