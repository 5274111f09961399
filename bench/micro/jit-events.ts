/**
 * Counts V8's JIT events (TurboFan optimisations, deoptimisations) inside the measured
 * window of each decision-benchmark repetition, for this build and optionally another
 * (`--before DIR`), with a given warm-up. Why counts: on a shared machine a tail percentile
 * moves with the neighbours, but whether the routing path is still being compiled (or
 * thrown back to the interpreter) while it is measured is a property of the code and the
 * protocol, and these counts repeat from run to run.
 *
 *   node dist/bench/micro/jit-events.js [--before DIR --label-before L] [--reps 5] [--warm-routes N,M] [--out DIR]
 *
 * Each variant × warm-up runs in one fresh process (`--trace-opt --trace-deopt`, stdout
 * line-buffered through `stdbuf` so V8's lines and the markers keep their order), all
 * repetitions in that process as run-micro.js does. Writes jit-events.{json,md}.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg } from './cli-arg.js';
import { gitOutput } from './git-output.js';

interface RepEvents {
  readonly rep: number;
  readonly optimized: number;
  readonly deopts: number;
  readonly dependencyDeopts: number;
  readonly p99: number;
}

interface VariantRun {
  readonly variant: string;
  readonly warmRoutes: number;
  readonly reps: readonly RepEvents[];
}

function runVariant(benchModule: string, reps: number, warmRoutes: number): RepEvents[] {
  const script = [
    "import { writeSync } from 'node:fs';",
    `const m = await import(${JSON.stringify(benchModule)});`,
    `for (let k = 0; k < ${reps}; k++) {`,
    `  const r = m.runDecisionBench({ ...m.DEFAULT_DECISION_BENCH, warmRoutes: ${warmRoutes} }, {`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the child script's own template literals
    '    onMeasureStart: () => writeSync(1, `@@start ${k}\\n`), onMeasureEnd: () => writeSync(1, `@@end ${k}\\n`) });',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the child script's own template literals
    '  writeSync(1, `@@result ${k} ${r.decisionMicros.p99} ${r.decisionMicros.count}\\n`);',
    '}',
  ].join('\n');
  const out = execFileSync(
    'stdbuf',
    ['-oL', process.execPath, '--expose-gc', '--trace-opt', '--trace-deopt', '--input-type=module', '-e', script],
    {
      encoding: 'utf8',
      timeout: 600_000,
      maxBuffer: 256 << 20,
    },
  );
  const res: RepEvents[] = [];
  let cur: { optimized: number; deopts: number; dependencyDeopts: number } | undefined;
  const counts: Array<{ optimized: number; deopts: number; dependencyDeopts: number }> = [];
  for (const line of out.split('\n')) {
    if (line.startsWith('@@start ')) cur = { optimized: 0, deopts: 0, dependencyDeopts: 0 };
    else if (line.startsWith('@@end ')) {
      if (cur !== undefined) counts.push(cur);
      cur = undefined;
    } else if (line.startsWith('@@result ')) {
      const [, k, p99] = line.split(' ');
      const c = counts[Number(k)] ?? { optimized: 0, deopts: 0, dependencyDeopts: 0 };
      res.push({ rep: Number(k), ...c, p99: Number(p99) });
    } else if (cur !== undefined) {
      if (line.startsWith('[completed optimizing')) cur.optimized++;
      else if (line.startsWith('[bailout (kind: deopt')) cur.deopts++;
      else if (line.startsWith('[marking dependent code')) cur.dependencyDeopts++;
    }
  }
  return res;
}

function main(): void {
  const args = process.argv.slice(2);
  const beforeRoot = arg(args, '--before');
  const labelBefore = arg(args, '--label-before') ?? beforeRoot ?? '';
  const reps = Math.max(1, Number(arg(args, '--reps') ?? 5) || 5);
  const warms = (arg(args, '--warm-routes') ?? '0,3000').split(',').map((x) => Math.max(0, Number(x) || 0));
  const out = arg(args, '--out') ?? join('bench', 'results', 'micro');
  const variants: Array<{ name: string; module: string }> = [];
  if (beforeRoot !== undefined)
    variants.push({ name: `before (${labelBefore})`, module: resolve(beforeRoot, 'dist/bench/micro/decision-bench.js') });
  variants.push({ name: 'now', module: resolve(fileURLToPath(new URL('.', import.meta.url)), 'decision-bench.js') });
  const startedAt = new Date().toISOString();
  const loadavgAtStart = loadavg();
  const runs: VariantRun[] = [];
  for (const warmRoutes of warms) {
    for (const v of variants) runs.push({ variant: v.name, warmRoutes, reps: runVariant(v.module, reps, warmRoutes) });
  }
  const results = {
    kind: 'cacheroute-jit-events',
    startedAt,
    gitCommit: gitOutput(['rev-parse', 'HEAD']),
    gitDirty: gitOutput(['status', '--porcelain', '--', 'src', 'bench/micro']) !== '',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    loadavgAtStart,
    loadavgAtEnd: loadavg(),
    runs,
  };
  const lines = [
    '# JIT events inside the measured decisions',
    '',
    `- now: commit \`${results.gitCommit}\`${results.gitDirty ? ' (with uncommitted changes under src/ or bench/micro/)' : ''}${beforeRoot !== undefined ? `; before: \`${labelBefore}\` (same benchmark protocol)` : ''}; Node ${results.node}`,
    `- ${results.cpu}, load average ${results.loadavgAtStart.map((x) => x.toFixed(2)).join(' / ')} at start, ${results.loadavgAtEnd.map((x) => x.toFixed(2)).join(' / ')} at end; started ${startedAt}`,
    `- ${reps} repetitions per process (fresh scheduler each, as run-micro.js), 5000 measured decisions each; counts from --trace-opt / --trace-deopt between the markers around the measured loop. The p99 (µs) is wall time under these flags on a shared machine: context, not the finding.`,
    '',
    '| variant | warm-up routes | ' +
      Array.from({ length: reps }, (_, k) => `rep ${k + 1}: optimised / deopts / dependency deopts (p99)`).join(' | ') +
      ' |',
    '| --- | --- | ' + Array.from({ length: reps }, () => '---').join(' | ') + ' |',
    ...runs.map(
      (r) =>
        `| ${r.variant} | ${r.warmRoutes} | ` +
        r.reps.map((x) => `${x.optimized} / ${x.deopts} / ${x.dependencyDeopts} (${x.p99.toFixed(0)})`).join(' | ') +
        ' |',
    ),
    '',
  ];
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'jit-events.json'), JSON.stringify(results, null, 2) + '\n');
  const md = lines.join('\n');
  writeFileSync(join(out, 'jit-events.md'), md);
  process.stdout.write(md);
}

main();
