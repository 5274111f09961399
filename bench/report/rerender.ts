/**
 * Re-renders a finished run's results.md and charts from what is committed — its
 * results.json and run.json — with the current report code. The per-request records are
 * not needed (they stay out of git); where they are still on disk, a run with interleaved
 * rounds also gets its rounds.md rebuilt from them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExperimentResult } from '../harness/run-experiment.js';
import type { PresetSpec } from '../presets/types.js';
import type { RunInfo } from './run-info.js';
import { hasRounds, roundRunOf, writeRoundsReport } from './rounds.js';
import { recordsFileName, writeResults } from './write-results.js';
import type { RequestRecord } from '../harness/driver.js';

/** Rewrites `dir`/results.md and its charts; returns the number of runs rendered. */
export function rerenderResults(dir: string): number {
  const run = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as RunInfo & {
    preset: PresetSpec; seed: number; command: string[]; startedAt: string; finishedAt: string; partial: boolean;
  };
  const { runs } = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: ExperimentResult[] };
  const { preset, seed, command, startedAt, finishedAt, partial, ...info } = run;
  writeResults({ outDir: dir, preset, seed, results: runs, info, startedAt, finishedAt, partial, command });
  return runs.length;
}

/**
 * Rebuilds `dir`/rounds.md from results.json and the per-request records in `rawDir`;
 * false when the run has no rounds or a run's records are not on disk.
 */
export function rerenderRounds(dir: string, rawDir: string): boolean {
  const { runs } = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: ExperimentResult[] };
  if (!hasRounds(runs)) return false;
  const files = runs.map((r) => join(rawDir, recordsFileName(r.id)));
  if (!files.every((f) => existsSync(f))) return false;
  const records = (f: string): RequestRecord[] =>
    readFileSync(f, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as RequestRecord);
  writeRoundsReport(dir, runs.map((r, i) => roundRunOf(r, records(files[i] as string))));
  return true;
}
