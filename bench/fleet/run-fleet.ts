/** `npm run bench -- fleet <study> [--seed n] [--only substring] [--out dir]`, `fleet report <study> [--out dir]` (results.md again from results.json with the current bars), `fleet fidelity [--real <results dir>]`, or `fleet --list` (a bench tool: bench/tools.ts). */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { FLEET_STUDIES } from '../presets/index.js';
import { runFidelity } from './fidelity.js';
import { collectRunInfo } from '../report/run-info.js';
import { rewriteResults, runStudy } from './study.js';

export async function runFleet(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'fidelity') return runFidelity(argv.slice(1), REPO_ROOT, (m) => void process.stderr.write(`${m}\n`));
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { seed: { type: 'string' }, only: { type: 'string' }, out: { type: 'string' }, list: { type: 'boolean', default: false } },
  });
  if (values.list || positionals.length === 0) {
    for (const s of FLEET_STUDIES) process.stdout.write(`${s.name.padEnd(16)} ~${s.estimatedMinutes} min  ${s.description}\n`);
    return positionals.length === 0 && !values.list ? 2 : 0;
  }
  const report = positionals[0] === 'report';
  const study = FLEET_STUDIES.find((s) => s.name === positionals[report ? 1 : 0]);
  if (study === undefined) {
    process.stderr.write(`unknown fleet study '${positionals[report ? 1 : 0]}'; known: ${FLEET_STUDIES.map((s) => s.name).join(', ')}\n`);
    return 2;
  }
  const seed = values.seed === undefined ? undefined : Number(values.seed);
  if (seed !== undefined && !Number.isInteger(seed)) {
    process.stderr.write('--seed must be an integer\n');
    return 2;
  }
  const outDir = resolve(values.out ?? resolve(REPO_ROOT, 'bench', 'results', `fleet-${study.name}`));
  if (report) {
    if (!existsSync(resolve(outDir, 'results.json'))) {
      process.stderr.write(`no results.json in ${outDir}: run \`npm run bench -- fleet ${study.name}\` first\n`);
      return 2;
    }
    const misses = rewriteResults(study, outDir, (collectRunInfo(REPO_ROOT).gitCommit ?? 'an unknown commit').slice(0, 7));
    process.stderr.write(`rewrote ${outDir}/results.md: ${misses.length} bar misses\n${misses.map((m) => `  ${m}\n`).join('')}`);
    return 0;
  }
  process.stderr.write(`fleet study ${study.name} (~${study.estimatedMinutes} min), writing ${outDir}\n`);
  await runStudy({
    study,
    repoRoot: REPO_ROOT,
    outDir,
    ...(seed !== undefined ? { seed } : {}),
    ...(values.only !== undefined ? { only: values.only } : {}),
    command: ['fleet', ...argv],
    log: (m) => void process.stderr.write(`${m}\n`),
  });
  return 0;
}

process.exitCode = await runFleet(process.argv.slice(2));
