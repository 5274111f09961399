/**
 * Writes a preset's output directory: results.md (tables), results.json (every run's
 * aggregates), run.json (provenance) and the SVG charts — what is committed, and all that
 * re-rendering needs. The per-request records (one JSON line per request, no prompt text)
 * go to a separate raw directory that git ignores. Called after every run so an
 * interrupted preset still leaves its completed runs on disk.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type { RequestRecord } from '../harness/driver.js';
import type { ReplicaSample } from '../harness/replica-sampler.js';
import type { ExperimentResult } from '../harness/run-experiment.js';
import type { PresetSpec } from '../presets/types.js';
import { buildCharts } from './charts.js';
import { portableString, writeJson, writeJsonRuns } from './result-files.js';
import { resultsMarkdown } from './results-markdown.js';
import type { RunInfo } from './run-info.js';

export interface WriteResultsInput {
  readonly outDir: string;
  readonly preset: PresetSpec;
  readonly seed: number;
  readonly results: readonly ExperimentResult[];
  readonly info: RunInfo;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly partial: boolean;
  readonly command: readonly string[];
  /** Paths under it are written relative to it; other machine paths are dropped (result-files.ts). */
  readonly repoRoot: string;
}

export function recordsFileName(id: string): string {
  return `${id.replace(/[^a-zA-Z0-9._@-]+/g, '__')}.jsonl`;
}

/**
 * Where a run's per-request records go: `bench/results/raw/<path under bench/results>` for
 * an output directory inside bench/results (ignored by git), `<outDir>/raw` elsewhere.
 */
export function rawDirFor(outDir: string, repoRoot: string): string {
  const results = join(repoRoot, 'bench', 'results');
  const rel = relative(results, outDir);
  const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  return inside ? join(results, 'raw', rel) : join(outDir, 'raw');
}

/** Empties the generated files of the output and raw directories (keeps anything else a human put there). */
export function prepareOutDir(outDir: string, rawDir: string): void {
  mkdirSync(outDir, { recursive: true });
  mkdirSync(rawDir, { recursive: true });
  for (const f of readdirSync(outDir)) {
    if (f.endsWith('.svg') || ['results.md', 'results.json', 'run.json', 'rounds.md', 'rounds.json'].includes(f)) rmSync(join(outDir, f));
  }
  for (const f of readdirSync(rawDir)) if (f.endsWith('.jsonl')) rmSync(join(rawDir, f));
}

export function writeRecords(rawDir: string, id: string, records: readonly RequestRecord[]): void {
  const round = (v: number | null): number | null => (v === null ? null : Math.round(v * 10) / 10);
  const lines = records.map((r) =>
    JSON.stringify({
      ...r,
      scheduledMs: round(r.scheduledMs),
      lagMs: round(r.lagMs),
      ttftMs: round(r.ttftMs),
      e2eMs: round(r.e2eMs),
      endMs: round(r.endMs),
    }),
  );
  writeFileSync(join(rawDir, recordsFileName(id)), lines.join('\n') + '\n');
}

/** The replica sampler's series of one run (git-ignored, next to its records). */
export function writeSamples(rawDir: string, id: string, samples: readonly ReplicaSample[]): void {
  writeFileSync(join(rawDir, recordsFileName(`${id}.samples`)), samples.map((s) => JSON.stringify(s)).join('\n') + '\n');
}

export function writeResults(input: WriteResultsInput): void {
  const charts = buildCharts(input.results);
  for (const c of charts) writeFileSync(join(input.outDir, c.file), c.svg);
  writeJsonRuns(
    join(input.outDir, 'results.json'),
    { preset: input.preset.name, seed: input.seed, partial: input.partial },
    'runs',
    input.results,
    input.repoRoot,
  );
  writeJson(
    join(input.outDir, 'run.json'),
    {
      preset: input.preset,
      seed: input.seed,
      command: input.command,
      startedAt: input.startedAt,
      finishedAt: input.finishedAt,
      partial: input.partial,
      ...input.info,
    },
    input.repoRoot,
  );
  writeFileSync(
    join(input.outDir, 'results.md'),
    portableString(
      resultsMarkdown({
        preset: input.preset,
        results: input.results,
        charts,
        info: input.info,
        startedAt: input.startedAt,
        finishedAt: input.finishedAt,
        seed: input.seed,
        partial: input.partial,
      }),
      input.repoRoot,
    ),
  );
}
