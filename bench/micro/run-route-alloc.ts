/**
 * Bytes allocated per routed request (route-alloc-bench.ts), for this build and optionally
 * for another build side by side (`--before DIR`: that tree's dist/bench/micro/route-alloc-bench.js,
 * e.g. an older commit unpacked with `git archive` plus this file, compiled), each in fresh
 * processes, alternating which goes first. Writes route-alloc.{json,md}.
 *
 *   node --expose-gc dist/bench/micro/run-route-alloc.js [--before DIR --label-before LABEL] [--rounds N] [--out DIR]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg } from './cli-arg.js';
import { gitOutput } from './git-output.js';
import type { RouteAllocResult } from './route-alloc-bench.js';

function runIn(benchModule: string): RouteAllocResult {
  const script =
    `const m = await import(${JSON.stringify(benchModule)});` +
    'const r = await m.runRouteAllocBench();' +
    'process.stdout.write(JSON.stringify(r));';
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 180_000,
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out) as RouteAllocResult;
}

function main(): void {
  const args = process.argv.slice(2);
  const beforeRoot = arg(args, '--before');
  const labelBefore = arg(args, '--label-before') ?? beforeRoot ?? '';
  const rounds = Math.max(1, Number(arg(args, '--rounds') ?? 2) || 2);
  const out = arg(args, '--out') ?? join('bench', 'results', 'micro');
  const nowModule = resolve(fileURLToPath(new URL('.', import.meta.url)), 'route-alloc-bench.js');
  const variants: Array<{ name: 'before' | 'now'; module: string }> = [{ name: 'now', module: nowModule }];
  if (beforeRoot !== undefined) variants.unshift({ name: 'before', module: resolve(beforeRoot, 'dist/bench/micro/route-alloc-bench.js') });
  const startedAt = new Date().toISOString();
  const runs: Array<{ variant: 'before' | 'now'; round: number; result: RouteAllocResult }> = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) runs.push({ variant: v.name, round, result: runIn(v.module) });
  }
  const results = {
    kind: 'cacheroute-route-alloc',
    startedAt,
    gitCommit: gitOutput(['rev-parse', 'HEAD']),
    gitDirty: gitOutput(['status', '--porcelain', '--', 'src', 'bench/micro']) !== '',
    before: beforeRoot !== undefined ? labelBefore : undefined,
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    loadavgAtStart: loadavg(),
    runs,
  };
  const f0 = (v: number): string => v.toFixed(0);
  const lines = [
    '# Bytes allocated per routed request',
    '',
    `- now: commit \`${results.gitCommit}\`${results.gitDirty ? ' (with uncommitted changes under src/ or bench/micro/)' : ''}${beforeRoot !== undefined ? `; before: \`${labelBefore}\`` : ''}; Node ${results.node}`,
    `- workload: cache-aware, 16 endpoints, 32 KB chat prompts, warm index, 64 requests in flight; lifecycle = route() + firstByte() + finish(usage)`,
    '- method: batches of 16 right after a full gc() (no scavenge inside a batch), V8 heap used before/after, mean over 40 batches; scavenges counted over 5000 lifecycles with nothing else allocating',
    '',
    '| variant | round | route() B | firstByte+finish B | lifecycle B (batch min–max) | scavenges / 1000 lifecycles | major GCs in 5000 |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...runs.map(
      (r) =>
        `| ${r.variant} | ${r.round + 1} | ${f0(r.result.routeBytes)} | ${f0(r.result.completeBytes)} | ${f0(r.result.lifecycleBytes)} (${f0(r.result.lifecycleBytesRange[0])}–${f0(r.result.lifecycleBytesRange[1])}) | ${r.result.scavengesPer1000.toFixed(1)} | ${r.result.majorGcsInSteadyRun} |`,
    ),
    '',
  ];
  const before = runs.filter((r) => r.variant === 'before');
  const now = runs.filter((r) => r.variant === 'now');
  if (before.length > 0) {
    const m = (xs: typeof runs): number => xs.reduce((a, r) => a + r.result.lifecycleBytes, 0) / xs.length;
    lines.push(
      `Lifecycle bytes now ÷ before: ${(m(now) / m(before)).toFixed(2)} (${f0(m(before))} → ${f0(m(now))} B per routed request).`,
      '',
    );
  }
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'route-alloc.json'), JSON.stringify(results, null, 2) + '\n');
  const md = lines.join('\n');
  writeFileSync(join(out, 'route-alloc.md'), md);
  process.stdout.write(md);
}

main();
