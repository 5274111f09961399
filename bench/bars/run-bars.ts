/**
 * The protocol-layer bars, measured side by side with a baseline build in one run:
 *
 *   npm run bench -- bars --baseline <commit-or-dir> [--out bench/results/bars] [--reps 3]
 *       [--parts decision,extproc,realistic] [--qps 8] [--extproc-duration-s 10] [--seed 1]
 *
 * 1. decision compute: bench/micro/decision-bench of each build, each repetition in a fresh
 *    process pinned to CPU 1; bar: this build's p99 ≤ 100 µs (median over repetitions).
 * 2. ext_proc streams per router CPU-second: bench/extproc-load/run with the router of each
 *    build pinned to CPU 1 (the load client on CPU 0), stream endings half-close (Envoy's
 *    ext_proc_graceful_grpc_close, as the shipped configs) and reset (Envoy's default);
 *    bar: ≥ 3,000 on half-close with 0 errors; the ratio to the baseline is reported.
 * 3. realistic path: the `peers` workload (4 sim engines, Moreh shape) through the real
 *    Envoy with response streaming on, at one moderate rate, both routers in turn (ABBA per
 *    repetition pair); router CPU per request from its own process-CPU metric; bar: this
 *    build's mean ≤ 1.15× the baseline's.
 * Builds alternate in every part so that machine drift hits both alike. Writes
 * <out>/summary.md, results.json (aggregates) and run.json (config, seed, commits, machine);
 * per-request records of part 3 go to bench/results/raw/bars-realistic/ (not committed).
 * Bounded: reps ≤ 6, each ext_proc run ≤ 60 s, part 3 by the preset's run budget.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ContenderSpec } from '../contenders/types.js';
import { runPreset } from '../harness/run-preset.js';
import type { ExperimentResult } from '../harness/run-experiment.js';
import { PEERS } from '../presets/peers.js';
import type { PresetSpec } from '../presets/types.js';
import { portableString, writeJson } from '../report/result-files.js';
import type { Distribution } from '../../test/kit/percentiles.js';
import { describeBuild, prepareBaseline, type Build } from './baseline-build.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const DECISION_CHILD = fileURLToPath(new URL('./decision-child.js', import.meta.url));
const EXTPROC_RUN = fileURLToPath(new URL('../extproc-load/run.js', import.meta.url));

export const BARS = { decisionP99Micros: 100, streamsPerCpuSecond: 3000, realisticCpuRatio: 1.15 } as const;

type Side = 'current' | 'baseline';

interface DecisionRun {
  readonly side: Side;
  readonly rep: number;
  readonly decisionMicros: Distribution;
  readonly hashMicros: Distribution;
  readonly matchMicros: Distribution;
  readonly routeCpuMicros: Distribution;
  readonly indexBlocksAtStart: number;
  readonly meanMatchedFraction: number;
  readonly matchMismatches: number;
}

interface ExtprocRun {
  readonly side: Side;
  readonly rep: number;
  readonly close: 'half-close' | 'reset';
  readonly streams: number;
  readonly errors: number;
  /** Of the errors: refused before any answer (a connection retirement; Envoy retries them). */
  readonly refused: number;
  readonly streamsPerSecond: number;
  readonly serverCpuCores: number;
  readonly cpuMicrosPerStream: number;
  readonly streamsPerCpuSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly connectionsOpened: number;
  readonly errorSamples: readonly string[];
}

export interface RealisticRun {
  readonly side: string;
  readonly label: string;
  readonly cpuMsPerRequest: number | null;
  readonly requests: number;
  readonly successRate: number | null;
  readonly ttftP50Ms: number | null;
  readonly ttftP99Ms: number | null;
  readonly decisionP99Us: number | null;
  readonly error: string | null;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** ABAB… with the first side swapped every repetition. */
function order(rep: number): readonly Side[] {
  return rep % 2 === 1 ? ['current', 'baseline'] : ['baseline', 'current'];
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return cpus().length >= 2;
  } catch {
    return false;
  }
}

function runDecision(builds: Record<Side, Build>, reps: number, log: (m: string) => void): DecisionRun[] {
  const pin = hasTaskset();
  const out: DecisionRun[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    for (const side of order(rep)) {
      const args = [DECISION_CHILD, builds[side].dir];
      const child = pin
        ? spawnSync('taskset', ['-c', '1', process.execPath, ...args], { encoding: 'utf8', timeout: 300_000 })
        : spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 300_000 });
      if (child.status !== 0) throw new Error(`decision bench of ${side} failed (status ${child.status}): ${child.stderr}`);
      const r = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Omit<DecisionRun, 'side' | 'rep'>;
      out.push({ side, rep, ...r });
      log(
        `decision ${side} rep ${rep}: p50 ${r.decisionMicros.p50?.toFixed(1)} p99 ${r.decisionMicros.p99?.toFixed(1)} µs, hash p50 ${r.hashMicros.p50?.toFixed(1)} µs`,
      );
    }
  }
  return out;
}

function runExtproc(builds: Record<Side, Build>, reps: number, durationS: number, log: (m: string) => void): ExtprocRun[] {
  const tmp = mkdtempSync(join(tmpdir(), 'cacheroute-bars-'));
  const out: ExtprocRun[] = [];
  try {
    for (let rep = 1; rep <= reps; rep++) {
      for (const close of ['half-close', 'reset'] as const) {
        for (const side of order(rep)) {
          const dir = join(tmp, `${side}-${close}-${rep}`);
          // Like with like: each build answers response headers on the stream (a build that
          // predates server.responseCompletion always does) instead of closing it after the
          // request side, so both answer three messages and see the same endings.
          const sameStream = builds[side].responseCompletion ? ['--response-completion', 'ext-proc'] : [];
          const child = spawnSync(
            process.execPath,
            [
              EXTPROC_RUN,
              '--router-dir',
              builds[side].dir,
              '--close',
              close,
              '--duration-s',
              String(durationS),
              ...sameStream,
              '--out',
              dir,
            ],
            {
              stdio: ['ignore', 'ignore', 'inherit'],
              timeout: (durationS + 60) * 1000,
            },
          );
          if (child.status !== 0 && child.status !== 1)
            throw new Error(`ext_proc load of ${side} failed (status ${child.status}, signal ${child.signal})`);
          const r = JSON.parse(readFileSync(join(dir, 'latest.json'), 'utf8')) as {
            result: {
              streams: number;
              errors: number;
              refused?: number;
              streamsPerSecond: number;
              serverCpuCores: number;
              serverCpuMicrosPerStream: number;
              streamsPerServerCpuSecond: number;
              latencyMs: { p50: number; p99: number };
              connectionsOpened: number;
              errorSamples: string[];
            };
          };
          const x = r.result;
          out.push({
            side,
            rep,
            close,
            streams: x.streams,
            errors: x.errors,
            refused: x.refused ?? 0,
            streamsPerSecond: x.streamsPerSecond,
            serverCpuCores: x.serverCpuCores,
            cpuMicrosPerStream: x.serverCpuMicrosPerStream,
            streamsPerCpuSecond: x.streamsPerServerCpuSecond,
            p50Ms: x.latencyMs.p50,
            p99Ms: x.latencyMs.p99,
            connectionsOpened: x.connectionsOpened,
            errorSamples: x.errorSamples,
          });
          log(
            `ext_proc ${close} ${side} rep ${rep}: ${x.streamsPerServerCpuSecond.toFixed(0)} streams per router CPU-s, ${x.errors} errors`,
          );
        }
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return out;
}

/** The peers shape at one rate, the two routers in ABBA order over `reps` pairs. */
export function realisticPreset(builds: Record<Side, Build>, qps: number, reps: number): PresetSpec {
  const contenders: ContenderSpec[] = [];
  // The bar compares like with like: both builds stream responses through the router, each
  // told so when its config has server.responseCompletion (a build without it has no other
  // path). Not telling a build that has the key leaves it on its default access-log path with
  // no access logger in Envoy's config: it would close every stream after the request side
  // and never see a response. The default path (Envoy's access log ends each request,
  // docs/decisions/0015) runs beside them for the record, for each build that has it.
  const routerMain = (side: Side): string => join(builds[side].dir, 'dist', 'src', 'main.js');
  for (let rep = 1; rep <= reps; rep++) {
    const sides = order(rep);
    for (const side of sides) {
      contenders.push({
        kind: 'cacheroute',
        label: `${side}-${rep}`,
        strategy: 'cache-aware',
        routerMain: routerMain(side),
        responsePath: 'ext-proc',
        ...(builds[side].responseCompletion ? {} : { routerPredatesResponseCompletion: true }),
      });
    }
    for (const side of sides.filter((x) => builds[x].responseCompletion)) {
      contenders.push({
        kind: 'cacheroute',
        label: `${side}-access-log-${rep}`,
        strategy: 'cache-aware',
        routerMain: routerMain(side),
        responsePath: 'access-log',
      });
    }
  }
  const base = PEERS.blocks[0]!;
  return {
    ...PEERS,
    name: 'bars-realistic',
    description: `router CPU per request, this build vs the baseline: the peers workload through Envoy (response streaming on) at ${qps} req/s`,
    estimatedMinutes: Math.ceil(contenders.length * 0.75),
    blocks: [{ ...base, name: 'realistic', qpsSweep: [qps], contenders, contenderMaxQps: {} }],
  };
}

async function runRealistic(
  builds: Record<Side, Build>,
  qps: number,
  reps: number,
  seed: number,
  log: (m: string) => void,
): Promise<RealisticRun[]> {
  const preset = realisticPreset(builds, qps, reps);
  const results: ExperimentResult[] = await runPreset({
    preset,
    outDir: join(REPO, 'bench', 'results', 'raw', 'bars-realistic'),
    repoRoot: REPO,
    seed,
    log,
    command: ['bars', 'realistic'],
  });
  return results.map((r) => realisticRunOf(r, realisticSideOf(r.contender.label)));
}

/** The side a realistic-path label stands for: `current`, `baseline`, or either with `-access-log`. */
export function realisticSideOf(label: string): string {
  const side = label.startsWith('current') ? 'current' : 'baseline';
  return label.startsWith(`${side}-access-log-`) ? `${side}-access-log` : side;
}

/** One realistic-path result as the bars report it. */
export function realisticRunOf(r: ExperimentResult, side: string): RealisticRun {
  return {
    side,
    label: r.contender.label,
    cpuMsPerRequest: r.routerDecision?.cpuMsPerRequest ?? null,
    requests: r.workload.requests,
    successRate: r.summary.success.successRate,
    ttftP50Ms: r.summary.ttftMs.p50,
    ttftP99Ms: r.summary.ttftMs.p99,
    decisionP99Us: r.routerDecision?.p99Us ?? null,
    error: r.error,
  };
}

const f = (v: number | null | undefined, d = 1): string => (v === null || v === undefined || Number.isNaN(v) ? '—' : v.toFixed(d));
const verdict = (ok: boolean): string => (ok ? '**met**' : '**NOT met**');

interface Summary {
  decision?: {
    current: { p99Median: number; p50Median: number; hashP50Median: number };
    baseline: { p99Median: number; p50Median: number; hashP50Median: number };
    met: boolean;
  };
  extproc?: Record<
    'half-close' | 'reset',
    {
      current: { streamsPerCpuSecond: number; errors: number; refused: number; streams: number };
      baseline: { streamsPerCpuSecond: number; errors: number; refused: number; streams: number };
      ratio: number;
    }
  > & { met: boolean };
  realistic?: { current: number; baseline: number; ratio: number; met: boolean; accessLog?: number; baselineAccessLog?: number };
}

function summarize(d: DecisionRun[], e: ExtprocRun[], r: RealisticRun[]): Summary {
  const s: Summary = {};
  if (d.length > 0) {
    const side = (x: Side) => {
      const runs = d.filter((v) => v.side === x);
      return {
        p99Median: median(runs.map((v) => v.decisionMicros.p99 ?? Number.NaN)),
        p50Median: median(runs.map((v) => v.decisionMicros.p50 ?? Number.NaN)),
        hashP50Median: median(runs.map((v) => v.hashMicros.p50 ?? Number.NaN)),
      };
    };
    const current = side('current');
    s.decision = { current, baseline: side('baseline'), met: current.p99Median <= BARS.decisionP99Micros };
  }
  if (e.length > 0) {
    const side = (close: ExtprocRun['close'], x: Side) => {
      const runs = e.filter((v) => v.side === x && v.close === close);
      return {
        streamsPerCpuSecond: median(runs.map((v) => v.streamsPerCpuSecond)),
        errors: runs.reduce((a, v) => a + v.errors, 0),
        refused: runs.reduce((a, v) => a + v.refused, 0),
        streams: runs.reduce((a, v) => a + v.streams, 0),
      };
    };
    const per = (close: ExtprocRun['close']) => {
      const current = side(close, 'current');
      const baseline = side(close, 'baseline');
      return { current, baseline, ratio: current.streamsPerCpuSecond / baseline.streamsPerCpuSecond };
    };
    const half = per('half-close');
    s.extproc = {
      'half-close': half,
      reset: per('reset'),
      met: half.current.streamsPerCpuSecond >= BARS.streamsPerCpuSecond && half.current.errors === 0,
    };
  }
  if (r.length > 0) {
    const side = (x: string): number => mean(r.filter((v) => v.side === x && v.cpuMsPerRequest !== null).map((v) => v.cpuMsPerRequest!));
    const current = side('current');
    const baseline = side('baseline');
    const accessLog = r.some((v) => v.side === 'current-access-log') ? side('current-access-log') : undefined;
    const baselineAccessLog = r.some((v) => v.side === 'baseline-access-log') ? side('baseline-access-log') : undefined;
    s.realistic = {
      current,
      baseline,
      ratio: current / baseline,
      met: current / baseline <= BARS.realisticCpuRatio,
      ...(accessLog !== undefined ? { accessLog } : {}),
      ...(baselineAccessLog !== undefined ? { baselineAccessLog } : {}),
    };
  }
  return s;
}

function markdown(run: RunJson, s: Summary, d: DecisionRun[], e: ExtprocRun[], r: RealisticRun[]): string {
  const lines: string[] = [
    '# Protocol-layer bars, side by side with the baseline',
    '',
    `This build \`${run.builds.current.commit.slice(0, 12)}\`${run.builds.current.dirty ? ' (uncommitted changes)' : ''} vs baseline \`${run.builds.baseline.commit.slice(0, 12)}\`${run.builds.baseline.dirty ? ' (uncommitted changes)' : ''}; ${run.startedAt} → ${run.finishedAt}; ${run.machine.cpus} × ${run.machine.cpuModel}, Node ${run.machine.node}; load average at start ${run.machine.loadAvgAtStart.map((x) => x.toFixed(2)).join(' / ')}. Shared, noisy machine: the two builds alternate in every part, compare them side by side.`,
    '',
    `Command: \`${run.command}\``,
    '',
    '| bar | this build | baseline | ratio | target | verdict |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  if (s.decision) {
    lines.push(
      `| decision compute p99 (µs, median of ${run.config.reps} runs) | ${f(s.decision.current.p99Median)} | ${f(s.decision.baseline.p99Median)} | ${f(s.decision.current.p99Median / s.decision.baseline.p99Median, 2)}× | ≤ ${BARS.decisionP99Micros} | ${verdict(s.decision.met)} |`,
    );
  }
  if (s.extproc) {
    const h = s.extproc['half-close'];
    lines.push(
      `| ext_proc streams per router CPU-second, half-close (median; errors) | ${f(h.current.streamsPerCpuSecond, 0)} (${h.current.errors} errors of ${h.current.streams}) | ${f(h.baseline.streamsPerCpuSecond, 0)} (${h.baseline.errors} errors) | ${f(h.ratio, 2)}× | ≥ ${BARS.streamsPerCpuSecond}, 0 errors | ${verdict(s.extproc.met)} |`,
    );
    const x = s.extproc.reset;
    lines.push(
      `| same, reset endings (Envoy's default; informational; refused = before any answer, at a connection retirement, which Envoy's refused-stream retry re-sends) | ${f(x.current.streamsPerCpuSecond, 0)} (${x.current.errors} errors, ${x.current.refused} refused, of ${x.current.streams}) | ${f(x.baseline.streamsPerCpuSecond, 0)} (${x.baseline.errors} errors, ${x.baseline.refused} refused, of ${x.baseline.streams}) | ${f(x.ratio, 2)}× | — | — |`,
    );
  }
  if (s.realistic) {
    lines.push(
      `| router CPU per routed request, peers shape through Envoy at ${run.config.qps} req/s, responses through the router in both (ms, mean) | ${f(s.realistic.current, 3)} | ${f(s.realistic.baseline, 3)} | ${f(s.realistic.ratio, 2)}× | ≤ ${BARS.realisticCpuRatio}× | ${verdict(s.realistic.met)} |`,
    );
    const { accessLog, baselineAccessLog } = s.realistic;
    if (accessLog !== undefined && baselineAccessLog !== undefined) {
      lines.push(
        `| same, each build on its default path (Envoy's access log ends each request; informational) | ${f(accessLog, 3)} | ${f(baselineAccessLog, 3)} | ${f(accessLog / baselineAccessLog, 2)}× | — | — |`,
      );
    } else if (accessLog !== undefined) {
      lines.push(
        `| same, this build on its default path (access log; informational) | ${f(accessLog, 3)} | ${f(s.realistic.baseline, 3)} | ${f(accessLog / s.realistic.baseline, 2)}× | — | — |`,
      );
    }
  }
  if (d.length > 0) {
    lines.push(
      '',
      '## Decision compute',
      '',
      'cache-aware, 16 endpoints, index warmed to ~100k blocks, 32 KB chat prompts, steady state (bench/micro/decision-bench.ts); one fresh process per run, pinned to CPU 1.',
      '',
    );
    lines.push(
      '| run | build | decision p50 / p90 / p99 µs | hash p50 / p99 µs | match p50 µs | route() CPU p50 µs | index blocks |',
      '| --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const v of d)
      lines.push(
        `| ${v.rep} | ${v.side} | ${f(v.decisionMicros.p50)} / ${f(v.decisionMicros.p90)} / ${f(v.decisionMicros.p99)} | ${f(v.hashMicros.p50)} / ${f(v.hashMicros.p99)} | ${f(v.matchMicros.p50)} | ${f(v.routeCpuMicros.p50)} | ${v.indexBlocksAtStart} |`,
      );
  }
  if (e.length > 0) {
    lines.push(
      '',
      '## ext_proc load',
      '',
      `bench/extproc-load/run.ts: the router CLI of each build pinned to CPU 1, the load client on CPU 0, 64 concurrent streams over 2 connections, each stream request headers (FDS) + one ~1.4 KB chat body + response headers (${completionNote(run.builds)}, so both answer the same three messages); ${run.config.extprocDurationS} s measured after 3 s warm-up.`,
      '',
    );
    lines.push(
      '| run | ending | build | streams/s | router cores | CPU µs/stream | streams per CPU-s | p50 / p99 ms | errors | connections |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const v of e)
      lines.push(
        `| ${v.rep} | ${v.close} | ${v.side} | ${f(v.streamsPerSecond, 0)} | ${f(v.serverCpuCores, 2)} | ${f(v.cpuMicrosPerStream, 0)} | ${f(v.streamsPerCpuSecond, 0)} | ${f(v.p50Ms)} / ${f(v.p99Ms)} | ${v.errors}${v.refused > 0 ? `, ${v.refused} refused` : ''}${v.errorSamples.length > 0 ? ` (${v.errorSamples[0]})` : ''} | ${v.connectionsOpened} |`,
      );
  }
  if (r.length > 0) {
    lines.push(
      '',
      '## Realistic path',
      '',
      `The \`peers\` workload (4 sim engines, 48 groups × 5 prompts, 1,600 + 200 tokens, 32 output tokens) through the real Envoy (override-host) at ${run.config.qps} req/s: \`current\`/\`baseline\` with response bodies FULL_DUPLEX_STREAMED through the router (${completionNote(run.builds)}), \`…-access-log\` on the build's default path (responses bypass the router; Envoy's gRPC access log ends each request); router CPU from \`cacheroute_process_cpu_seconds_total\` over the measured run, per request sent.`,
      '',
    );
    lines.push(
      '| run | build | CPU ms/request | requests | success | TTFT p50 / p99 ms | decision p99 µs |',
      '| --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const v of r)
      lines.push(
        `| ${v.label} | ${v.side} | ${f(v.cpuMsPerRequest, 3)} | ${v.requests} | ${v.successRate === null ? '—' : (v.successRate * 100).toFixed(1) + '%'} | ${f(v.ttftP50Ms, 0)} / ${f(v.ttftP99Ms, 0)} | ${f(v.decisionP99Us, 0)}${v.error ? ` (error: ${v.error})` : ''} |`,
      );
  }
  lines.push('');
  return lines.join('\n');
}

/** How each build was told to read responses from its stream. */
function completionNote(builds: Record<Side, Build>): string {
  const told = (['current', 'baseline'] as const).filter((x) => builds[x].responseCompletion);
  if (told.length === 2) return 'both builds with `server.responseCompletion: ext-proc`';
  if (told.length === 0) return 'both builds predate `server.responseCompletion` and always do';
  return `this build with \`server.responseCompletion: ext-proc\`, the baseline predates the key and always does`;
}

interface RunJson {
  readonly benchmark: 'bars';
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly seed: number;
  readonly config: {
    readonly reps: number;
    readonly parts: readonly string[];
    readonly qps: number;
    readonly extprocDurationS: number;
    readonly bars: typeof BARS;
  };
  readonly builds: Record<Side, Build>;
  readonly machine: {
    readonly cpus: number;
    readonly cpuModel: string;
    readonly memGiB: number;
    readonly node: string;
    readonly loadAvgAtStart: readonly number[];
    readonly loadAvgAtEnd: readonly number[];
  };
}

export async function runBars(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      baseline: { type: 'string' },
      out: { type: 'string', default: join(REPO, 'bench', 'results', 'bars') },
      reps: { type: 'string', default: '3' },
      parts: { type: 'string', default: 'decision,extproc,realistic' },
      qps: { type: 'string', default: '8' },
      'extproc-duration-s': { type: 'string', default: '10' },
      seed: { type: 'string', default: '1' },
    },
  });
  if (values.baseline === undefined) {
    process.stderr.write(
      'usage: npm run bench -- bars --baseline <commit-or-dir> [--out dir] [--reps 3] [--parts decision,extproc,realistic] [--qps 8] [--extproc-duration-s 10] [--seed 1]\n',
    );
    return 2;
  }
  const log = (m: string): void => void process.stderr.write(`${m}\n`);
  const reps = Math.min(6, Math.max(1, Number(values.reps)));
  const parts = values.parts.split(',').filter((p) => ['decision', 'extproc', 'realistic'].includes(p));
  const qps = Math.max(1, Number(values.qps));
  const durationS = Math.min(60, Math.max(2, Number(values['extproc-duration-s'])));
  const seed = Number(values.seed);
  const startedAt = new Date().toISOString();
  const loadAvgAtStart = loadavg();
  const builds: Record<Side, Build> = { current: describeBuild(REPO), baseline: prepareBaseline(values.baseline, REPO, log) };
  log(
    `bars: this build ${builds.current.commit.slice(0, 12)} vs baseline ${builds.baseline.commit.slice(0, 12)} (${builds.baseline.dir}); parts ${parts.join(',')}, ${reps} repetitions`,
  );
  const d = parts.includes('decision') ? runDecision(builds, reps, log) : [];
  const e = parts.includes('extproc') ? runExtproc(builds, reps, durationS, log) : [];
  const r = parts.includes('realistic') ? await runRealistic(builds, qps, Math.max(1, Math.ceil(reps / 2)), seed, log) : [];
  const run: RunJson = {
    benchmark: 'bars',
    command: `npm run bench -- bars ${argv.join(' ')}`,
    startedAt,
    finishedAt: new Date().toISOString(),
    seed,
    config: { reps, parts, qps, extprocDurationS: durationS, bars: BARS },
    builds,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      loadAvgAtStart,
      loadAvgAtEnd: loadavg(),
    },
  };
  const summary = summarize(d, e, r);
  const outDir = resolve(values.out);
  mkdirSync(outDir, { recursive: true });
  writeJson(join(outDir, 'run.json'), run, REPO);
  writeJson(join(outDir, 'results.json'), { summary, decision: d, extproc: e, realistic: r }, REPO);
  const md = markdown(run, summary, d, e, r);
  writeFileSync(join(outDir, 'summary.md'), portableString(md, REPO));
  process.stdout.write(md);
  return 0;
}
