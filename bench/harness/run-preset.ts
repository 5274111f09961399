/**
 * Runs a preset: expands its matrix, starts each engine setup once, runs every experiment
 * of that setup in order (engines reset between runs), and rewrites the output directory
 * after each run so partial results survive an interruption. Contenders run in several
 * interleaved rounds (labels `name#n`) also get rounds.md/rounds.json (bench/report/rounds.ts).
 */
import { expandPreset } from '../presets/expand.js';
import type { Experiment, PresetSpec } from '../presets/types.js';
import { fmtMs, fmtPct } from '../report/format.js';
import { collectRunInfo } from '../report/run-info.js';
import { hasRounds, roundRunOf, writeRoundsReport, type RoundRun } from '../report/rounds.js';
import { prepareOutDir, rawDirFor, writeRecords, writeResults, writeSamples } from '../report/write-results.js';
import { startEngineFleet } from './engines.js';
import { runExperiment, type ExperimentResult } from './run-experiment.js';

export interface RunPresetOptions {
  readonly preset: PresetSpec;
  readonly outDir: string;
  /** Per-request records (git-ignored); default rawDirFor(outDir, repoRoot). */
  readonly rawDir?: string;
  readonly repoRoot: string;
  /** Overrides the preset's seed. */
  readonly seed?: number;
  /** Only runs whose id contains one of these comma-separated substrings. */
  readonly only?: string;
  readonly signal?: AbortSignal;
  readonly log: (msg: string) => void;
  readonly command: readonly string[];
}

export function selectExperiments(preset: PresetSpec, only?: string): Experiment[] {
  const all = expandPreset(preset);
  if (only === undefined) return all;
  const parts = only.split(',').filter((p) => p !== '');
  return all.filter((e) => parts.some((p) => e.id.includes(p)));
}

export async function runPreset(opts: RunPresetOptions): Promise<ExperimentResult[]> {
  const { preset, log } = opts;
  const seed = opts.seed ?? preset.seed;
  const all = expandPreset(preset);
  const experiments = selectExperiments(preset, opts.only);
  const startedAt = new Date().toISOString();
  const info = collectRunInfo(opts.repoRoot);
  const rawDir = opts.rawDir ?? rawDirFor(opts.outDir, opts.repoRoot);
  prepareOutDir(opts.outDir, rawDir);
  const results: ExperimentResult[] = [];
  const roundRuns: RoundRun[] = [];
  const write = (partial: boolean): void => {
    writeResults({
      outDir: opts.outDir,
      preset,
      seed,
      results,
      info,
      startedAt,
      finishedAt: new Date().toISOString(),
      partial,
      command: opts.command,
      repoRoot: opts.repoRoot,
    });
    // Contenders run in several interleaved rounds (`label#n`): their pooled comparison.
    if (hasRounds(results)) writeRoundsReport(opts.outDir, roundRuns);
  };

  const setups: string[] = [];
  for (const e of experiments) if (!setups.includes(e.engines.label)) setups.push(e.engines.label);
  let index = 0;
  for (const label of setups) {
    const mine = experiments.filter((e) => e.engines.label === label);
    const setup = (mine[0] as Experiment).engines;
    if (opts.signal?.aborted) break;
    log(`engines ${label}: starting ${setup.count} ${setup.kind === 'vllm' ? 'real vLLM' : 'simulated'} engines`);
    const fleet = await startEngineFleet(setup.count, setup.flags, preset.model, setup);
    try {
      for (const exp of mine) {
        if (opts.signal?.aborted) break;
        index++;
        log(`[${index}/${experiments.length}] ${exp.id}`);
        const { result, records, replicaSamples } = await runExperiment(exp, {
          engines: fleet.engines,
          model: preset.model,
          seed: seed + (exp.seedOffset ?? 0),
          repoRoot: opts.repoRoot,
          budget: preset.budget,
          log,
          ...(opts.signal ? { signal: opts.signal } : {}),
        });
        results.push(result);
        roundRuns.push(roundRunOf(result, records));
        writeRecords(rawDir, exp.id, records);
        if (replicaSamples.length > 0) writeSamples(rawDir, exp.id, replicaSamples);
        const s = result.summary;
        log(
          `    success ${fmtPct(s.success.successRate)}  TTFT p50 ${fmtMs(s.ttftMs.p50)} p99 ${fmtMs(s.ttftMs.p99)}  ` +
            `req hit ${fmtPct(s.hits.requestHitRate)} tok hit ${fmtPct(s.hits.engineTokenHitRate)}  spread ${s.spread.requestsMaxOverMean?.toFixed(2) ?? '–'}×  (${result.durationS.toFixed(0)} s)`,
        );
        write(true);
      }
    } finally {
      await fleet.stop();
    }
  }
  write(experiments.length !== all.length || results.length !== experiments.length);
  return results;
}
