/**
 * Before/after A/B of the decision benchmark: runs `runDecisionBench` from this build and
 * from another build of the project (e.g. an older commit unpacked with `git archive` and
 * compiled), each in a fresh process, alternating which goes first, several rounds. Same
 * machine, same minutes, same noise: the ratios are the comparison.
 *
 *   node dist/bench/micro/decision-ab.js --before /tmp/cr-before --label-before e048632 [--rounds 3] [--out DIR]
 *
 * `--before` is the other tree's root (its dist/bench/micro/decision-bench.js is loaded).
 * Writes decision-ab.{json,md}. Bounded: rounds × 2 processes of ~5 s each.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Distribution } from '../stats/percentiles.js';
import { arg } from './cli-arg.js';
import { gitOutput } from './git-output.js';

interface Summary {
  readonly decisionMicros: Distribution;
  readonly routeMicros: Distribution;
  readonly routeCpuMicros: Distribution;
  readonly hashMicros: Distribution;
  readonly matchMicros: Distribution;
}

interface Run {
  readonly variant: 'before' | 'now';
  readonly round: number;
  readonly summary: Summary;
}

function runIn(benchModule: string): Summary {
  const script =
    `const m = await import(${JSON.stringify(benchModule)});` +
    'const r = m.runDecisionBench();' +
    'process.stdout.write(JSON.stringify({ decisionMicros: r.decisionMicros, routeMicros: r.routeMicros, routeCpuMicros: r.routeCpuMicros, hashMicros: r.hashMicros, matchMicros: r.matchMicros }));';
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out) as Summary;
}

const f1 = (v: number | null): string => (v === null ? '—' : v.toFixed(1));

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function main(): void {
  const args = process.argv.slice(2);
  const beforeRoot = arg(args, '--before');
  if (beforeRoot === undefined) throw new Error('usage: decision-ab --before DIR [--label-before LABEL] [--rounds N] [--out DIR]');
  const labelBefore = arg(args, '--label-before') ?? beforeRoot;
  const rounds = Math.max(1, Number(arg(args, '--rounds') ?? 3) || 3);
  const out = arg(args, '--out') ?? join('bench', 'results', 'micro');
  const modules = {
    before: resolve(beforeRoot, 'dist/bench/micro/decision-bench.js'),
    now: resolve(fileURLToPath(new URL('.', import.meta.url)), 'decision-bench.js'),
  };
  const startedAt = new Date().toISOString();
  const loadavgAtStart = loadavg();
  const runs: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    const order: Array<'before' | 'now'> = round % 2 === 0 ? ['before', 'now'] : ['now', 'before'];
    for (const variant of order) runs.push({ variant, round, summary: runIn(modules[variant]) });
  }
  const results = {
    kind: 'cacheroute-decision-ab',
    startedAt,
    gitCommit: gitOutput(['rev-parse', 'HEAD']),
    before: labelBefore,
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    loadavgAtStart,
    loadavgAtEnd: loadavg(),
    runs,
  };
  const metrics: Array<[string, keyof Summary]> = [
    ['decision (hash+match+score+pick)', 'decisionMicros'],
    ['route() incl. index insert', 'routeMicros'],
    ['hash only (32 KB)', 'hashMicros'],
    ['match only (16 endpoints)', 'matchMicros'],
  ];
  const pct = ['p50', 'p90', 'p99'] as const;
  const lines = [
    '# Decision compute: before / after, side by side',
    '',
    `- now: commit \`${results.gitCommit}\`; before: \`${labelBefore}\`; Node ${results.node}`,
    `- ${results.cpu}, ${results.cores} cores, load average ${loadavgAtStart.map((x) => x.toFixed(2)).join(' / ')} at start, ${results.loadavgAtEnd.map((x) => x.toFixed(2)).join(' / ')} at end`,
    `- ${rounds} rounds, each running both builds' \`runDecisionBench\` (defaults: 16 endpoints, 32 KB chat prompts, 100k-block warm index, 5000 decisions) in fresh processes, alternating which goes first. Started ${startedAt}.`,
    '',
    '| µs | variant | ' +
      Array.from({ length: rounds }, (_, r) => `round ${r + 1} p50 / p90 / p99`).join(' | ') +
      ' | median p50 / p99 | now ÷ before (median p50 / p99) |',
    '| --- | --- | ' + Array.from({ length: rounds }, () => '---').join(' | ') + ' | --- | --- |',
  ];
  for (const [label, key] of metrics) {
    const med = (variant: 'before' | 'now', p: (typeof pct)[number]): number =>
      median(runs.filter((r) => r.variant === variant).map((r) => r.summary[key][p] ?? Number.NaN));
    for (const variant of ['before', 'now'] as const) {
      const cells = runs.filter((r) => r.variant === variant).map((r) => pct.map((p) => f1(r.summary[key][p])).join(' / '));
      const ratio =
        variant === 'now'
          ? `${(med('now', 'p50') / med('before', 'p50')).toFixed(2)} / ${(med('now', 'p99') / med('before', 'p99')).toFixed(2)}`
          : '';
      lines.push(
        `| ${variant === 'before' ? label : ''} | ${variant} | ${cells.join(' | ')} | ${f1(med(variant, 'p50'))} / ${f1(med(variant, 'p99'))} | ${ratio} |`,
      );
    }
  }
  lines.push('');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'decision-ab.json'), JSON.stringify(results, null, 2) + '\n');
  const md = lines.join('\n');
  writeFileSync(join(out, 'decision-ab.md'), md);
  process.stdout.write(md);
}

main();
