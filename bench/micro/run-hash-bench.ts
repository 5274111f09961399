/**
 * The block-hash library comparison on its own (hash-bench.ts), with provenance:
 *
 *   npx tsc -p tsconfig.json && node dist/bench/micro/run-hash-bench.js [--baseline-dir DIR]
 *       [--out bench/results/hash-candidates]
 *
 * Optional candidates are compared only when installed:
 * `npm install --no-save @node-rs/xxhash@1.7.8 hash-wasm@4.13.0`. Writes <out>/summary.md
 * and run.json (config, commit, machine; no per-call samples). Bounded: a fixed number of
 * prompts and rounds, well under a minute.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gitOutput } from './git-output.js';
import { hashBenchTable, runHashBench } from './hash-bench.js';

const { values } = parseArgs({
  options: {
    'baseline-dir': { type: 'string' },
    out: { type: 'string', default: join('bench', 'results', 'hash-candidates') },
  },
});
const startedAt = new Date().toISOString();
const loadAvgAtStart = loadavg();
const baselineDir = values['baseline-dir'] === undefined ? undefined : resolve(values['baseline-dir']);
const result = await runHashBench(baselineDir === undefined ? {} : { baselineDir });
const baselineCommit = baselineDir === undefined ? null : gitOutput(['-C', baselineDir, 'rev-parse', 'HEAD']);
const run = {
  benchmark: 'hash-candidates',
  command: `node dist/bench/micro/run-hash-bench.js${baselineDir ? ` --baseline-dir ${values['baseline-dir']}` : ''}`,
  startedAt,
  finishedAt: new Date().toISOString(),
  seed: 3,
  commit: gitOutput(['rev-parse', 'HEAD']),
  dirty: gitOutput(['status', '--porcelain', '--', 'src', 'bench/micro']) !== '',
  baselineCommit,
  config: {
    promptChars: result.promptChars,
    blockChars: result.blockChars,
    prompts: result.prompts,
    rounds: result.roundsPerRepetition,
    repetitions: result.repetitions,
  },
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, loadAvgAtStart, loadAvgAtEnd: loadavg() },
  result,
};
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'run.json'), JSON.stringify(run, null, 1) + '\n');
const md = [
  '# Block-hash libraries side by side',
  '',
  `Commit \`${run.commit.slice(0, 12)}\`${run.dirty ? ' (uncommitted changes)' : ''}${baselineCommit ? `, baseline build \`${baselineCommit.slice(0, 12)}\`` : ''}; ${startedAt}; ${run.machine.cpus} × ${run.machine.cpuModel}, Node ${run.machine.node}, load average at start ${loadAvgAtStart.map((x) => x.toFixed(2)).join(' / ')}.`,
  `Command: \`${run.command}\`.`,
  '',
  ...hashBenchTable(result),
  '',
].join('\n');
writeFileSync(join(out, 'summary.md'), md);
process.stdout.write(md);
