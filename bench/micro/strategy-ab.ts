/**
 * Decision cost of several presets side by side on the decision benchmark (16 endpoints,
 * 32 KB chat prompts, warm 100k-block index; decision-bench.ts): each preset in a fresh
 * process, the order rotated every round, so the presets share the machine's minutes and
 * noise. The bar of the predicted-TTFT presets: decision p99 within 1.2× of cache-aware's.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/micro/strategy-ab.js [--strategies a,b,c] [--rounds 3] [--out DIR]
 *
 * Writes strategy-ab.{json,md}. Bounded: rounds × strategies processes of ~5–10 s each.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Distribution } from '../../test/kit/percentiles.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { writeJsonRuns } from '../report/result-files.js';
import { arg } from './cli-arg.js';
import { gitOutput } from './git-output.js';

interface Run {
  readonly strategy: string;
  readonly round: number;
  readonly decisionMicros: Distribution;
  readonly routeMicros: Distribution;
}

function runOne(strategy: string): Omit<Run, 'strategy' | 'round'> {
  const module = new URL('./decision-bench.js', import.meta.url).href;
  const script =
    `const m = await import(${JSON.stringify(module)});` +
    `const r = m.runDecisionBench({ ...m.DEFAULT_DECISION_BENCH, strategy: ${JSON.stringify(strategy)} });` +
    'process.stdout.write(JSON.stringify({ decisionMicros: r.decisionMicros, routeMicros: r.routeMicros }));';
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 180_000 });
  return JSON.parse(out) as Omit<Run, 'strategy' | 'round'>;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function main(): void {
  const args = process.argv.slice(2);
  const strategies = (arg(args, '--strategies') ?? 'cache-aware,predicted-ttft,sticky-until-saturated').split(',');
  const rounds = Math.max(1, Number(arg(args, '--rounds') ?? 3) || 3);
  const out = arg(args, '--out') ?? join('bench', 'results', 'micro');
  const load = loadavg();
  const runs: Run[] = [];
  for (let r = 1; r <= rounds; r++) {
    const k = (r - 1) % strategies.length;
    for (const s of [...strategies.slice(k), ...strategies.slice(0, k)]) {
      const res = runOne(s);
      runs.push({ strategy: s, round: r, ...res });
      process.stderr.write(
        `round ${r} ${s}: decision p50 ${res.decisionMicros.p50?.toFixed(1)} p99 ${res.decisionMicros.p99?.toFixed(1)} µs\n`,
      );
    }
  }
  const base = strategies[0]!;
  const p = (s: string, r: number, q: 'p50' | 'p99'): number =>
    runs.find((x) => x.strategy === s && x.round === r)!.decisionMicros[q] ?? Number.NaN;
  const f1 = (v: number): string => v.toFixed(1);
  const lines = [
    '# Decision cost by preset (decision benchmark: 16 endpoints, 32 KB chat prompts, warm index)',
    '',
    `- commit \`${gitOutput(['rev-parse', '--short', 'HEAD'])}\`, Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} × ${cpus().length}, load average at start ${load.map((x) => x.toFixed(2)).join(' / ')}`,
    `- ${rounds} rounds, fresh process per run, order rotated each round; \`node dist/bench/micro/strategy-ab.js --strategies ${strategies.join(',')} --rounds ${rounds}\``,
    `- ratio: median over rounds of (preset ÷ ${base}) in the same round`,
    '',
    `| preset | decision p50 µs per round | decision p99 µs per round | p50 ÷ ${base} | p99 ÷ ${base} |`,
    '| --- | --- | --- | --- | --- |',
  ];
  const rs = Array.from({ length: rounds }, (_, i) => i + 1);
  for (const s of strategies) {
    lines.push(
      `| ${s} | ${rs.map((r) => f1(p(s, r, 'p50'))).join(' / ')} | ${rs.map((r) => f1(p(s, r, 'p99'))).join(' / ')} | ${median(rs.map((r) => p(s, r, 'p50') / p(base, r, 'p50'))).toFixed(2)}× | ${median(rs.map((r) => p(s, r, 'p99') / p(base, r, 'p99'))).toFixed(2)}× |`,
    );
  }
  mkdirSync(out, { recursive: true });
  writeJsonRuns(
    join(out, 'strategy-ab.json'),
    { kind: 'cacheroute-strategy-ab', strategies, rounds, loadavgAtStart: load },
    'runs',
    runs,
    REPO_ROOT,
  );
  writeFileSync(join(out, 'strategy-ab.md'), `${lines.join('\n')}\n`);
  process.stderr.write(`wrote ${join(out, 'strategy-ab.md')}\n`);
}

main();
