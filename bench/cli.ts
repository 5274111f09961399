/**
 * Benchmark entry point.
 *
 *   npm run bench -- --preset <name> [--out <dir>] [--seed <n>] [--only <substring>]
 *   npm run bench -- --list
 *   npm run bench -- --preset <name> --dry-run     (print the run matrix and workload sizes)
 *   npm run bench -- --preset <name> --engine-flags kv-cache-blocks=900,time-scale=3   (override simulator flags)
 *   npm run bench -- --rerender <dir>   (rewrite results.md and charts of a finished run from its
 *                                        results.json and run.json with the current report code;
 *                                        no per-request records needed; rounds.md is rebuilt
 *                                        too where they are still on disk)
 *   npm run bench -- bars --baseline <commit-or-dir> [...]   (the protocol-layer bars side by side
 *                                        with a baseline build: bench/bars/run-bars.ts)
 *   npm run bench -- response-path [...]    (router CPU per request, responses through the
 *                                        router vs Envoy's access log: bench/bars/response-path.ts)
 *
 * Writes bench/results/<preset>/ (results.md, results.json, run.json, charts: what is committed)
 * and the per-request records to bench/results/raw/<preset>/ (git-ignored).
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../test/kit/repo-paths.js';
import { runPreset, selectExperiments } from './harness/run-preset.js';
import { findPreset, PRESETS } from './presets/index.js';
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

function main(): Promise<number> | number {
  if (process.argv[2] === 'bars') return import('./bars/run-bars.js').then((m) => m.runBars(process.argv.slice(3)));
  if (process.argv[2] === 'response-path') return import('./bars/response-path.js').then((m) => m.runResponsePath(process.argv.slice(3)));
  const { values } = parseArgs({
    options: {
      preset: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      only: { type: 'string' },
      'engine-flags': { type: 'string' },
      rerender: { type: 'string' },
      pool: { type: 'string' },
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
      'usage: npm run bench -- --preset <name> [--out dir] [--seed n] [--only substring] [--dry-run] | --list | --rerender <dir> | --pool <dir>,<dir>[,...] --out <dir>\n',
    );
    return values.help ? 0 : 2;
  }
  if (values.list) {
    for (const p of PRESETS) process.stdout.write(`${p.name.padEnd(16)} ~${p.estimatedMinutes} min  ${p.description}\n`);
    return 0;
  }
  const found = findPreset(values.preset as string);
  if (!found) {
    process.stderr.write(`unknown preset '${values.preset}'; known: ${PRESETS.map((p) => p.name).join(', ')}\n`);
    return 2;
  }
  const preset = values['engine-flags'] === undefined ? found : withEngineFlags(found, parseFlagList(values['engine-flags']));
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
