/**
 * Decision cost of the real router at fleet sizes: 16, 256 and 1,024 endpoints, 32 KB chat
 * prompts, a warm ~100k-block prefix index, the router built as `cacheroute serve` builds it
 * (engine metrics on, shipped defaults) with a fresh scraped sample for every endpoint
 * (engine-samples.ts). Each size runs in a fresh process (decision-bench.ts, steady state),
 * sizes rotated each round. Bar (issue #26): decision p99 ≤ 500 µs at 1,024 endpoints on a
 * quiet machine — run it under the heavy lock.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/micro/fleet-decision-cost.js [--sizes 16,256,1024] [--rounds 2]
 *     [--strategies cache-aware,predicted-ttft] [--out DIR] [--cpu-prof-dir DIR]
 *
 * With several strategies each size runs every strategy in the same round (order rotated), and
 * the table gains each one's ratio to the first in the same round.
 *
 * Writes results.md, results.json and run.json. Bounded: rounds × sizes processes, each
 * ≤ 5 min (killed past that).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Distribution } from '../../test/kit/percentiles.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { writeJson, writeJsonRuns } from '../report/result-files.js';
import { collectRunInfo } from '../report/run-info.js';
import { arg } from './cli-arg.js';
import { PRESET_NAMES } from '../../src/plugins/presets/presets.js';

interface Run {
  readonly strategy: string;
  readonly endpoints: number;
  readonly round: number;
  readonly decisionMicros: Distribution;
  readonly routeMicros: Distribution;
  readonly routeCpuMicros: Distribution;
  readonly indexBlocksAtStart: number;
  readonly reasons: Record<string, number>;
}

const DECISIONS = 5000;

function runOne(endpoints: number, strategy: string, profDir: string | undefined): Omit<Run, 'endpoints' | 'round' | 'strategy'> {
  const module = new URL('./decision-bench.js', import.meta.url).href;
  const script =
    `const m = await import(${JSON.stringify(module)});` +
    `const r = m.runDecisionBench({ ...m.DEFAULT_DECISION_BENCH, endpoints: ${endpoints}, decisions: ${DECISIONS}, serveDefaults: true, strategy: ${JSON.stringify(strategy)} });` +
    'process.stdout.write(JSON.stringify({ decisionMicros: r.decisionMicros, routeMicros: r.routeMicros, routeCpuMicros: r.routeCpuMicros, indexBlocksAtStart: r.indexBlocksAtStart, reasons: r.reasons }));';
  const flags =
    profDir !== undefined
      ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=decision-${strategy}-${endpoints}.cpuprofile`]
      : [];
  const out = execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 300_000 });
  return JSON.parse(out) as Omit<Run, 'endpoints' | 'round' | 'strategy'>;
}

function main(): void {
  const args = process.argv.slice(2);
  const sizes = (arg(args, '--sizes') ?? '16,256,1024').split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 4096)) throw new Error('--sizes: integers 1..4096');
  const rounds = Math.max(1, Math.min(5, Number(arg(args, '--rounds') ?? 2) || 2));
  const out = resolve(arg(args, '--out') ?? join(REPO_ROOT, 'bench', 'results', 'fleet-decision-cost'));
  const profDir = arg(args, '--cpu-prof-dir');
  const strategies = (arg(args, '--strategies') ?? 'cache-aware').split(',');
  for (const st of strategies) if (!(PRESET_NAMES as readonly string[]).includes(st)) throw new Error(`--strategies: unknown preset ${st}`);
  const info = collectRunInfo(REPO_ROOT);
  const startedAt = new Date().toISOString();
  const runs: Run[] = [];
  for (let r = 1; r <= rounds; r++) {
    const k = (r - 1) % sizes.length;
    for (const n of [...sizes.slice(k), ...sizes.slice(0, k)]) {
      const j = (r - 1) % strategies.length;
      for (const strategy of [...strategies.slice(j), ...strategies.slice(0, j)]) {
        const res = runOne(n, strategy, profDir);
        runs.push({ strategy, endpoints: n, round: r, ...res });
        process.stderr.write(
          `round ${r} ${n} endpoints ${strategy}: decision p50 ${res.decisionMicros.p50?.toFixed(0)} p99 ${res.decisionMicros.p99?.toFixed(0)} µs\n`,
        );
      }
    }
  }
  const f0 = (v: number | null | undefined): string => (v === undefined || v === null ? '–' : v.toFixed(0));
  const lines = [
    '# Decision cost at fleet sizes (32 KB chat prompts, warm index, `cacheroute serve` defaults)',
    '',
    `The real scheduler built from the document \`cacheroute serve\` reads (only the endpoints named; engine metrics on, every other default as shipped; strategy ${strategies.map((x) => `\`${x}\``).join(', ')}), a prefix index warmed to ~100k blocks with chat conversations, every endpoint given a fresh scraped sample (waiting, running, KV usage, cache size) re-scraped once per 50 decisions, 64 requests kept in flight. ${DECISIONS} measured decisions per run after 3,000 warm ones, one fresh process per run, sizes rotated each round.`,
    '',
    `Reproduce (under the heavy lock, quiet machine): \`npx tsc -p tsconfig.json && flock /tmp/cacheroute-heavy.lock node dist/bench/micro/fleet-decision-cost.js${sizes.join(',') !== '16,256,1024' ? ` --sizes ${sizes.join(',')}` : ''} --rounds ${rounds}${strategies.length > 1 || strategies[0] !== 'cache-aware' ? ` --strategies ${strategies.join(',')}` : ''}\`.`,
    '',
    `- decision: the scheduler's own decisionMicros (hash, prefix match, filters, scorers, pick); route: the whole Scheduler.route call including the routed hooks (index insert); route CPU: process CPU time around the harness's route step (the call, plus the re-scrape slice and the finish of a ticket leaving the in-flight window).`,
    `- load average at start ${info.loadAvgAtStart.map((x) => x.toFixed(2)).join(' / ')}; ${info.cpus} × ${info.cpuModel}; Node ${info.node}.`,
    '',
    `| strategy | endpoints | round | decision p50 µs | decision p99 µs | route p50 µs | route p99 µs | route CPU p99 µs | bar p99 ≤ 500 µs | p50 / p99 ÷ ${strategies[0]} |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const ratio = (a: number | null | undefined, b: number | null | undefined): string =>
    a === undefined || a === null || b === undefined || b === null || b <= 0 ? '–' : `${(a / b).toFixed(2)}×`;
  for (const st of strategies) {
    for (const n of sizes) {
      for (const x of runs.filter((y) => y.endpoints === n && y.strategy === st).sort((a, b) => a.round - b.round)) {
        const bar = n === 1024 ? ((x.decisionMicros.p99 ?? Number.POSITIVE_INFINITY) <= 500 ? 'met' : 'MISSED') : '–';
        const ref = runs.find((y) => y.endpoints === n && y.round === x.round && y.strategy === strategies[0])!;
        lines.push(
          `| ${st} | ${n} | ${x.round} | ${f0(x.decisionMicros.p50)} | ${f0(x.decisionMicros.p99)} | ${f0(x.routeMicros.p50)} | ${f0(x.routeMicros.p99)} | ${f0(x.routeCpuMicros.p99)} | ${bar} | ${ratio(x.decisionMicros.p50, ref.decisionMicros.p50)} / ${ratio(x.decisionMicros.p99, ref.decisionMicros.p99)} |`,
        );
      }
    }
  }
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.md'), `${lines.join('\n')}\n`);
  writeJsonRuns(
    join(out, 'results.json'),
    { kind: 'cacheroute-fleet-decision-cost', sizes, rounds, strategies, decisions: DECISIONS },
    'runs',
    runs,
    REPO_ROOT,
  );
  writeJson(
    join(out, 'run.json'),
    {
      study: 'fleet-decision-cost',
      command: [
        'node',
        'dist/bench/micro/fleet-decision-cost.js',
        ...(sizes.join(',') !== '16,256,1024' ? ['--sizes', sizes.join(',')] : []),
        '--rounds',
        String(rounds),
        ...(strategies.length > 1 || strategies[0] !== 'cache-aware' ? ['--strategies', strategies.join(',')] : []),
      ],
      startedAt,
      finishedAt: new Date().toISOString(),
      info,
    },
    REPO_ROOT,
  );
  process.stderr.write(`wrote ${join(out, 'results.md')}\n`);
}

main();
