/**
 * Benchmark entry point: every benchmark runs through it.
 *
 *   npm run bench -- --list                         (presets, their options, and the tools)
 *   npm run bench -- --preset <name> [--out <dir>] [--seed <n>] [--only <substring>] [--option k=v ...]
 *   npm run bench -- --preset <name> --dry-run     (print the run matrix and workload sizes)
 *   npm run bench -- --preset <name> --engine-flags kv-cache-blocks=900,time-scale=3   (override simulator flags)
 *   npm run bench -- --rerender <dir>   (rewrite results.md and charts of a finished run from its
 *                                        results.json and run.json with the current report code;
 *                                        no per-request records needed; rounds.md is rebuilt
 *                                        too where they are still on disk)
 *   npm run bench -- <tool> [...]        (a benchmark that is not a preset matrix: bench/tools.ts,
 *                                        e.g. `bars --baseline <commit-or-dir>`)
 *
 * Heavy components a preset or tool needs (real vLLM, NATS, kube-apiserver) are set up
 * first by their own scripts (bench/components.ts); `npm run demo` sets up only the rest.
 *
 * Writes bench/results/<preset>/ (results.md, results.json, run.json, charts: what is committed)
 * and the per-request records to bench/results/raw/<preset>/ (git-ignored).
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../test/kit/repo-paths.js';
import { runPreset, selectExperiments } from './harness/run-preset.js';
import { presetNeeds, setUp } from './components.js';
import { applyOptions, optionValues } from './presets/options.js';
import { findPreset, PRESETS } from './presets/index.js';
import { findTool, TOOLS } from './tools.js';
import { poolRunDirs, rerenderResults, rerenderRounds } from './report/rerender.js';
import { rawDirFor } from './report/write-results.js';
import type { PresetSpec } from './presets/types.js';
import { buildWorkload } from './workloads/scenario.js';
import { idealReuse } from './workloads/types.js';

/** `k=v,k=v` → { k: v } (numbers stay numbers). */
function parseFlagList(text: string): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const [k, v] = part.split('=');
    if (k === undefined || v === undefined) throw new Error(`--engine-flags: expected k=v, got '${part}'`);
    out[k.trim().replace(/^--/, '')] = Number.isFinite(Number(v)) && v.trim() !== '' ? Number(v) : v.trim();
  }
  return out;
}

/** The preset with extra simulator flags on every engine setup (labels marked so results say so). */
function withEngineFlags(preset: PresetSpec, flags: Record<string, string | number>): PresetSpec {
  const tag = Object.entries(flags)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return {
    ...preset,
    blocks: preset.blocks.map((b) => ({
      ...b,
      engines: {
        ...b.engines,
        label: `${b.engines.label}+${tag}`,
        flags: { ...b.engines.flags, ...flags },
        rationale: `${b.engines.rationale} Overridden from the command line: ${tag}.`,
      },
    })),
  };
}

function rerender(dir: string): number {
  const runs = rerenderResults(dir, REPO_ROOT);
  process.stderr.write(`rewrote ${join(dir, 'results.md')} (${runs} runs)\n`);
  if (rerenderRounds(dir, rawDirFor(dir, REPO_ROOT)))
    process.stderr.write(`rewrote ${join(dir, 'rounds.md')} from the per-request records\n`);
  return 0;
}

/** Runs a tool's script in a child process with its arguments; resolves to its exit code. */
function runTool(name: string, args: readonly string[]): Promise<number> | number {
  const tool = findTool(name);
  if (tool === undefined) return 2;
  setUp(tool.needs, REPO_ROOT);
  if (name === 'bars') return import('./bars/run-bars.js').then((m) => m.runBars([...args]));
  const child = spawn(process.execPath, [...(tool.nodeFlags ?? []), join(REPO_ROOT, 'dist', 'bench', tool.script), ...args], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
  });
  const forward = (sig: NodeJS.Signals): void => void child.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((done) => child.once('exit', (code, signal) => done(code ?? (signal ? 1 : 0))));
}

function list(): number {
  for (const p of PRESETS) {
    process.stdout.write(`${p.name.padEnd(20)} ~${String(p.estimatedMinutes).padStart(2)} min  ${p.description}\n`);
    for (const o of p.options ?? [])
      process.stdout.write(`${''.padEnd(30)}--option ${o.name}=${optionValues(o)} (default ${o.default}): ${o.description}\n`);
  }
  process.stdout.write('\ntools (npm run bench -- <tool> [arguments]; each script documents its arguments):\n');
  for (const t of TOOLS) process.stdout.write(`${t.name.padEnd(20)} ~${String(t.estimatedMinutes).padStart(2)} min  ${t.description}\n`);
  return 0;
}

function main(): Promise<number> | number {
  const first = process.argv[2];
  if (first !== undefined && findTool(first) !== undefined) return runTool(first, process.argv.slice(3));
  const { values } = parseArgs({
    options: {
      preset: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      only: { type: 'string' },
      'engine-flags': { type: 'string' },
      rerender: { type: 'string' },
      pool: { type: 'string' },
      option: { type: 'string', multiple: true },
      list: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.rerender !== undefined) return rerender(resolve(values.rerender));
  if (values.pool !== undefined) {
    if (values.out === undefined) {
      process.stderr.write('--pool needs --out <dir>\n');
      return 2;
    }
    const dirs = values.pool
      .split(',')
      .filter((d) => d !== '')
      .map((d) => resolve(d));
    const rounds = poolRunDirs(dirs, resolve(values.out), REPO_ROOT);
    process.stderr.write(`wrote ${join(resolve(values.out), 'rounds.md')} (${rounds} rounds from ${dirs.length} runs)\n`);
    return 0;
  }
  if (values.help || (!values.list && values.preset === undefined)) {
    process.stdout.write(
      'usage: npm run bench -- --preset <name> [--out dir] [--seed n] [--only substring] [--option k=v ...] [--dry-run] | --list | <tool> [arguments] | --rerender <dir> | --pool <dir>,<dir>[,...] --out <dir>\n',
    );
    return values.help ? 0 : 2;
  }
  if (values.list) return list();
  const found = findPreset(values.preset as string);
  if (!found) {
    process.stderr.write(`unknown preset '${values.preset}'; known: ${PRESETS.map((p) => p.name).join(', ')}\n`);
    return 2;
  }
  const chosen = applyOptions(found, values.option ?? []);
  const preset = values['engine-flags'] === undefined ? chosen : withEngineFlags(chosen, parseFlagList(values['engine-flags']));
  const seed = values.seed === undefined ? preset.seed : Number(values.seed);
  if (!Number.isInteger(seed)) {
    process.stderr.write('--seed must be an integer\n');
    return 2;
  }
  if (values['dry-run']) {
    for (const e of selectExperiments(preset, values.only)) {
      const w = buildWorkload(e.scenario, seed + (e.seedOffset ?? 0), REPO_ROOT);
      const measured = w.requests.filter((r) => !r.warmup);
      const tokens = measured.reduce((a, r) => a + r.promptTokens, 0);
      process.stdout.write(
        `${e.id.padEnd(60)} ${String(measured.length).padStart(5)} req (+${w.requests.length - measured.length} warm-up), avg prompt ${(tokens / Math.max(1, measured.length)).toFixed(0)} tok, ideal reuse ${(idealReuse(w.requests) * 100).toFixed(1)}%, seed ${seed + (e.seedOffset ?? 0)}, arrivals span ${(((measured.at(-1)?.atMs ?? 0) - (measured[0]?.atMs ?? 0)) / 1000).toFixed(1)} s\n`,
      );
    }
    return 0;
  }
  setUp(presetNeeds(preset), REPO_ROOT);
  const outDir = resolve(values.out ?? resolve(REPO_ROOT, 'bench', 'results', preset.name));
  const abort = new AbortController();
  const onSignal = (): void => {
    process.stderr.write('\ninterrupted: finishing the current run and writing partial results\n');
    abort.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const log = (msg: string): void => void process.stderr.write(`${msg}\n`);
  log(`preset ${preset.name} (~${preset.estimatedMinutes} min), seed ${seed}, writing ${outDir}`);
  return runPreset({
    preset,
    outDir,
    repoRoot: REPO_ROOT,
    seed,
    ...(values.only !== undefined ? { only: values.only } : {}),
    signal: abort.signal,
    log,
    command: process.argv.slice(2),
  }).then(() => {
    log(`done: ${outDir}/results.md`);
    return 0;
  });
}

Promise.resolve(main()).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
