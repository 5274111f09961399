/**
 * Re-renders a finished run's results.md and charts from what is committed — its
 * results.json and run.json — with the current report code. The per-request records are
 * not needed (they stay out of git).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExperimentResult } from '../harness/run-experiment.js';
import type { PresetSpec } from '../presets/types.js';
import type { RunInfo } from './run-info.js';
import { writeResults } from './write-results.js';

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
