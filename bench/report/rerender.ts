/**
 * Re-renders a finished run's results.md and charts from what is committed — its
 * results.json and run.json — with the current report code. The per-request records are
 * not needed (they stay out of git); where they are still on disk, a run with interleaved
 * rounds also gets its rounds.md rebuilt from them.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ExperimentResult } from '../harness/run-experiment.js';
import type { PresetSpec } from '../presets/types.js';
import { writeJson } from './result-files.js';
import type { RunInfo } from './run-info.js';
import { hasRounds, roundRunOf, writeRoundsReport, type RoundRun } from './rounds.js';
import { rawDirFor, recordsFileName, writeResults } from './write-results.js';
import type { RequestRecord } from '../harness/driver.js';

/** Rewrites `dir`/results.md and its charts; returns the number of runs rendered. */
export function rerenderResults(dir: string, repoRoot: string): number {
  const run = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as RunInfo & {
    preset: PresetSpec;
    seed: number;
    command: string[];
    startedAt: string;
    finishedAt: string;
    partial: boolean;
  };
  const { runs } = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: ExperimentResult[] };
  const { preset, seed, command, startedAt, finishedAt, partial, ...info } = run;
  writeResults({ outDir: dir, preset, seed, results: runs, info, startedAt, finishedAt, partial, command, repoRoot });
  return runs.length;
}

const readRecords = (f: string): RequestRecord[] =>
  readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RequestRecord);

/** Every run's rounds from its records in `rawDir`, or the first records file not on disk. */
function loadRoundRuns(runs: readonly ExperimentResult[], rawDir: string): { readonly rounds: RoundRun[] } | { readonly missing: string } {
  const files = runs.map((r) => join(rawDir, recordsFileName(r.id)));
  const missing = files.find((f) => !existsSync(f));
  if (missing !== undefined) return { missing };
  return { rounds: runs.map((r, i) => roundRunOf(r, readRecords(files[i] as string))) };
}

/**
 * One rounds.md over several runs of the same preset (each with its own seeds, e.g. `--seed 1`
 * and `--seed 5`): every round of every run pooled, run k's rounds numbered after run k−1's,
 * so the pooled ratio and its whole-rounds interval rest on all of them. Needs each run's
 * per-request records on disk; writes rounds.md, rounds.json and pool.json (the runs pooled:
 * directory, preset, seed, commit) to `outDir`. Returns the number of rounds pooled.
 */
export function poolRunDirs(dirs: readonly string[], outDir: string, repoRoot: string): number {
  if (dirs.length < 2) throw new Error('pooling needs at least two run directories');
  const pooled: RoundRun[] = [];
  const sources: { dir: string; preset: string; seed: number; commit: string | null; rounds: number }[] = [];
  let offset = 0;
  for (const dir of dirs) {
    const { runs } = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: ExperimentResult[] };
    if (!hasRounds(runs)) throw new Error(`${dir}: no interleaved rounds to pool`);
    const info = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as {
      preset: { name: string };
      seed: number;
      gitCommit: string | null;
    };
    if (sources.length > 0 && sources[0]?.preset !== info.preset.name)
      throw new Error(`${dir}: preset ${info.preset.name}, not ${sources[0]?.preset}`);
    const loaded = loadRoundRuns(runs, rawDirFor(dir, repoRoot));
    if ('missing' in loaded) throw new Error(`${dir}: the per-request records ${loaded.missing} are not on disk`);
    const last = Math.max(...loaded.rounds.map((r) => r.round));
    for (const run of loaded.rounds) pooled.push({ ...run, round: run.round + offset });
    sources.push({ dir: relative(outDir, dir) || '.', preset: info.preset.name, seed: info.seed, commit: info.gitCommit, rounds: last });
    offset += last;
  }
  mkdirSync(outDir, { recursive: true });
  writeRoundsReport(outDir, pooled);
  writeJson(join(outDir, 'pool.json'), { pooled: sources }, repoRoot);
  return offset;
}

/**
 * Rebuilds `dir`/rounds.md from results.json and the per-request records in `rawDir`;
 * false when the run has no rounds or a run's records are not on disk.
 */
export function rerenderRounds(dir: string, rawDir: string): boolean {
  const { runs } = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: ExperimentResult[] };
  if (!hasRounds(runs)) return false;
  const loaded = loadRoundRuns(runs, rawDir);
  if ('missing' in loaded) return false;
  writeRoundsReport(dir, loaded.rounds);
  return true;
}
