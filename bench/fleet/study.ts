/**
 * A fleet study: cells (fleet size × workload × router inputs), each run for every contender
 * in the fleet simulator, on one seed. Deterministic, so the figures are exact ratios, not
 * noisy ones; only the wall/CPU times vary between machines.
 *
 * Output (bench/results/fleet-<name>/): results.json (one row per cell × contender),
 * results.md (a table per group of cells with the distance to the oracle and the bars),
 * run.json (commit, command, seed, the study spec), charts (TTFT p99 and hit rate per cell).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contender as contenderByName, type ContenderOptions, presetOf } from '../../src/simulate/contenders.js';
import type { EngineModelConfig } from '../../src/simulate/engine/batching-engine.js';
import { engineModelProfile } from '../../src/simulate/engine/profiles.js';
import { simulateAsync } from '../../src/simulate/fleet-simulator.js';
import type { SimSummary } from '../../src/simulate/summary.js';
import type { SimEngineSpec, SimOptions } from '../../src/simulate/types.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { ensureTinyModel } from '../../test/kit/tiny-model.js';
import { writeJsonRuns } from '../report/result-files.js';
import { collectRunInfo } from '../report/run-info.js';
import { barChart } from '../report/svg-chart.js';
import { buildWorkload, type ScenarioSpec } from '../workloads/scenario.js';
import { simRequests } from './sim-requests.js';

export interface FleetSpec {
  readonly engines: number;
  readonly profile: 'gpu-like' | 'vllm-cpu-tiny';
  /** Replaces the profile's values (KV size, speed…) on every engine. */
  readonly model?: Partial<EngineModelConfig>;
  /** Engines from this index on get `slowModel` too (heterogeneous fleets). */
  readonly slowFrom?: number;
  readonly slowModel?: Partial<EngineModelConfig>;
}

export interface FleetCell {
  /** Table the cell belongs to (one results.md section per group). */
  readonly group: string;
  /** Row label within the group, e.g. `64 engines` or `scrape 500 ms`. */
  readonly label: string;
  readonly fleet: FleetSpec;
  readonly scenario: ScenarioSpec;
  readonly contenders: readonly string[];
  readonly sim?: Omit<SimOptions, 'seed' | 'onProgress' | 'engineTokenizer'>;
  /** Must not name machine paths (it goes into run.json): the KV-event tokenizer is `engineTokenizer`. */
  readonly contenderOptions?: Omit<ContenderOptions, 'kvEvents'>;
  /**
   * `tiny-model`: the engines tokenize with the project's tiny model's tokenizer
   * (test/kit/tiny-model.ts) and the `+kv-events` / `+kv-hybrid` contenders key the engines'
   * KV events with the same one, as a precise index in `serve` does.
   */
  readonly engineTokenizer?: 'tiny-model';
}

export interface FleetStudy {
  readonly name: string;
  readonly description: string;
  readonly seed: number;
  readonly estimatedMinutes: number;
  /** How to read the tables (goes into results.md). */
  readonly notes: readonly string[];
  readonly cells: readonly FleetCell[];
  /**
   * What the run showed and why each bar misses, written after reading this seed's tables
   * (the simulator is deterministic, so they hold for a rerun at the same commit).
   */
  readonly findings?: readonly string[];
  /** Study-specific sections of results.md (its own tables, after the generic ones) and its own bars' misses. */
  readonly report?: (rows: readonly StudyRow[]) => { readonly sections: readonly string[]; readonly misses: readonly string[] };
}

export interface StudyRow {
  readonly group: string;
  readonly cell: string;
  readonly contender: string;
  readonly source: string;
  readonly engines: number;
  readonly summary: SimSummary;
}

export function fleetOf(spec: FleetSpec): SimEngineSpec[] {
  const base = engineModelProfile(spec.profile);
  if (base === undefined) throw new Error(`unknown engine profile ${spec.profile}`);
  return Array.from({ length: spec.engines }, (_, i) => ({
    model: { ...base, ...spec.model, ...(spec.slowFrom !== undefined && i >= spec.slowFrom ? spec.slowModel : {}) },
    profile: spec.profile,
  }));
}

export interface RunStudyOptions {
  readonly study: FleetStudy;
  readonly repoRoot: string;
  readonly outDir: string;
  readonly seed?: number;
  readonly only?: string;
  readonly command: readonly string[];
  readonly log: (msg: string) => void;
}

/** The tiny model's tokenizer, loaded once per process (cells that name it share it). */
let tinyTokenizer: Promise<{ readonly dir: string; readonly tokenizer: ModelTokenizer }> | undefined;
function tinyModelTokenizer(): Promise<{ readonly dir: string; readonly tokenizer: ModelTokenizer }> {
  tinyTokenizer ??= (async () => {
    const { dir } = ensureTinyModel();
    return { dir, tokenizer: await ModelTokenizer.fromDirectory(dir) };
  })();
  return tinyTokenizer;
}

export async function runStudy(opts: RunStudyOptions): Promise<StudyRow[]> {
  const { study, log } = opts;
  const seed = opts.seed ?? study.seed;
  const info = collectRunInfo(opts.repoRoot);
  const startedAt = new Date().toISOString();
  const rows: StudyRow[] = [];
  const cells = study.cells.filter((c) => opts.only === undefined || `${c.group}/${c.label}`.includes(opts.only));
  mkdirSync(opts.outDir, { recursive: true });
  for (const [k, cell] of cells.entries()) {
    const workload = buildWorkload(cell.scenario, seed, opts.repoRoot);
    const requests = simRequests(workload);
    const fleet = fleetOf(cell.fleet);
    const tok = cell.engineTokenizer === 'tiny-model' ? await tinyModelTokenizer() : undefined;
    const contenderOptions: ContenderOptions = {
      // A ttft-model is told the engines' slots, as an operator would configure it.
      engineSlots: fleet[0]!.model.maxNumSeqs,
      ...cell.contenderOptions,
      ...(tok !== undefined ? { kvEvents: { tokenizerDir: tok.dir, blockSize: fleet[0]!.model.blockSize } } : {}),
    };
    for (const name of cell.contenders) {
      const c = contenderByName(name, contenderOptions);
      log(`[${k + 1}/${cells.length}] ${cell.group} / ${cell.label} / ${name}: ${requests.length} requests, ${fleet.length} engines`);
      const r = await simulateAsync(requests, fleet, c, {
        ...cell.sim,
        ...(tok !== undefined ? { engineTokenizer: tok.tokenizer } : {}),
        seed,
        progressEvery: Math.max(5000, Math.floor(requests.length / 4)),
        onProgress: (p) =>
          p.done < p.total &&
          log(`    ${p.done}/${p.total} requests, virtual ${(p.virtualMs / 1000).toFixed(0)} s, wall ${(p.wallMs / 1000).toFixed(0)} s`),
      });
      const s = r.summary;
      log(
        `    hit ${(s.hitRate * 100).toFixed(1)}%  TTFT p50 ${s.ttftP50Ms.toFixed(0)} p99 ${s.ttftP99Ms.toFixed(0)} ms  busiest ${(s.busiestShare * 100).toFixed(1)}%  failed ${s.failed}  (${(s.wallMs / 1000).toFixed(1)} s wall)`,
      );
      rows.push({ group: cell.group, cell: cell.label, contender: name, source: c.source, engines: fleet.length, summary: s });
    }
    writeOutputs(opts, seed, rows, info, startedAt, k + 1 < cells.length);
  }
  return rows;
}

/**
 * Writes results.md again from a committed results.json with this commit's tables and bars
 * (`npm run bench -- fleet report <study>`): the figures are the run's, only how they are
 * judged is current. Returns the bar misses.
 */
export function rewriteResults(study: FleetStudy, outDir: string, commit: string): string[] {
  const file = JSON.parse(readFileSync(join(outDir, 'results.json'), 'utf8')) as {
    seed: number;
    partial: boolean;
    rows: StudyRow[];
  };
  // JSON has no NaN: a figure that was not a number comes back as null.
  const rows = file.rows.map((r) => ({
    ...r,
    summary: Object.fromEntries(Object.entries(r.summary).map(([k, v]) => [k, v === null ? Number.NaN : v])) as unknown as SimSummary,
  }));
  const md = resultsMarkdown(
    study,
    file.seed,
    rows,
    file.partial,
    `Tables and bars rewritten from results.json at ${commit} (\`npm run bench -- fleet report ${study.name}\`); the figures are the run's (run.json).`,
  );
  writeFileSync(join(outDir, 'results.md'), md);
  const routing = [...new Set(rows.map((r) => `${r.group}\u0000${r.cell}`))].flatMap((k) => {
    const [g, c] = k.split('\u0000') as [string, string];
    return barMisses(
      g,
      c,
      rows.filter((r) => r.group === g && r.cell === c),
    );
  });
  return [...routing, ...(study.report?.(rows).misses ?? [])];
}

function writeOutputs(
  opts: RunStudyOptions,
  seed: number,
  rows: readonly StudyRow[],
  info: ReturnType<typeof collectRunInfo>,
  startedAt: string,
  partial: boolean,
): void {
  const { study, outDir, repoRoot } = opts;
  writeJsonRuns(join(outDir, 'results.json'), { study: study.name, seed, partial }, 'rows', rows, repoRoot);
  // The study's cells one per line, after the rest of its spec.
  const { cells: specCells, ...spec } = study;
  writeJsonRuns(
    join(outDir, 'run.json'),
    {
      study: study.name,
      seed,
      command: ['npm', 'run', 'bench', '--', ...opts.command],
      startedAt,
      finishedAt: new Date().toISOString(),
      partial,
      info,
      spec,
    },
    'cells',
    specCells,
    repoRoot,
  );
  writeFileSync(join(outDir, 'results.md'), resultsMarkdown(study, seed, rows, partial));
  const groups = [...new Set(rows.map((r) => r.group))];
  for (const g of groups) {
    const inGroup = rows.filter((r) => r.group === g);
    const cellsOf = [...new Set(inGroup.map((r) => r.cell))];
    const names = [...new Set(inGroup.map((r) => r.contender))];
    const series = (pick: (s: SimSummary) => number) =>
      names.map((n, i) => ({
        name: n,
        color: i,
        values: cellsOf.map((c) => {
          const r = inGroup.find((x) => x.cell === c && x.contender === n);
          return r === undefined || !Number.isFinite(pick(r.summary)) ? null : pick(r.summary);
        }),
      }));
    const slug = g.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
    writeFileSync(
      join(outDir, `${slug}-ttft-p99.svg`),
      barChart({
        title: `${g}: TTFT p99 (ms)`,
        yLabel: 'ms',
        categories: cellsOf,
        series: series((s) => s.ttftP99Ms),
        valueLabel: (v) => v.toFixed(0),
      }),
    );
    writeFileSync(
      join(outDir, `${slug}-hit-rate.svg`),
      barChart({
        title: `${g}: prefix-cache hit rate`,
        yLabel: 'hit rate',
        yMax: 1,
        categories: cellsOf,
        series: series((s) => s.hitRate),
        valueLabel: (v) => v.toFixed(2),
      }),
    );
  }
}

const DEFAULT = 'cacheroute:cache-aware';
const BOUNDS = new Set(['oracle', 'clairvoyant']);

function fmt(v: number, d = 0): string {
  return Number.isFinite(v) ? v.toFixed(d) : '—';
}

/** The tables, the distance to the oracle and the bars, as measured. */
export function resultsMarkdown(study: FleetStudy, seed: number, rows: readonly StudyRow[], partial: boolean, provenance?: string): string {
  const out: string[] = [
    `# Fleet study \`${study.name}\`${partial ? ' (partial)' : ''}`,
    '',
    study.description,
    '',
    `Seed ${seed}. Reproduce: \`npm run bench -- fleet ${study.name}\`.${provenance !== undefined ? ` ${provenance}` : ''}`,
    '',
  ];
  for (const n of study.notes) out.push(`- ${n}`);
  out.push('');
  const misses: string[] = [];
  for (const g of [...new Set(rows.map((r) => r.group))]) {
    out.push(`## ${g}`, '');
    const inGroup = rows.filter((r) => r.group === g);
    // Follow-up turns' hit rate, for groups whose workload has them (multi-turn, agentic).
    const fu = inGroup.some((r) => r.summary.followUps > 0);
    out.push(
      `| cell | contender | hit rate |${fu ? ' follow-up hit |' : ''} TTFT p50 ms | TTFT p99 ms | × oracle p50 | × oracle p99 | busiest engine | failed | decision p99 µs | wall s |`,
    );
    out.push(`|---|---|---|${fu ? '---|' : ''}---|---|---|---|---|---|---|---|`);
    for (const cell of [...new Set(inGroup.map((r) => r.cell))]) {
      const inCell = inGroup.filter((r) => r.cell === cell);
      const oracle = inCell.find((r) => r.contender === 'oracle')?.summary;
      for (const r of inCell) {
        const s = r.summary;
        const x50 = oracle === undefined ? Number.NaN : s.ttftP50Ms / oracle.ttftP50Ms;
        const x99 = oracle === undefined ? Number.NaN : s.ttftP99Ms / oracle.ttftP99Ms;
        out.push(
          `| ${cell} | ${r.contender} | ${fmt(s.hitRate * 100, 1)}% |${fu ? ` ${fmt(s.followUpHitRate * 100, 1)}% |` : ''} ${fmt(s.ttftP50Ms)} | ${fmt(s.ttftP99Ms)} | ${fmt(x50, 2)} | ${fmt(x99, 2)} | ${fmt(s.busiestShare * 100, 1)}% | ${s.failed} | ${fmt(s.decisionP99Micros)} | ${fmt(s.wallMs / 1000, 1)} |`,
        );
      }
      misses.push(...barMisses(g, cell, inCell));
    }
    out.push(
      '',
      `![${g} TTFT p99](${g.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}-ttft-p99.svg) ![${g} hit rate](${g.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}-hit-rate.svg)`,
      '',
    );
  }
  if (study.report !== undefined) {
    const own = study.report(rows);
    out.push(...own.sections, '');
    misses.push(...own.misses);
  }
  if (study.findings !== undefined && study.findings.length > 0) {
    out.push('## Findings and the reasons for the misses', '');
    for (const f of study.findings) out.push(`- ${f}`);
    out.push('');
  }
  out.push('## Bars, as measured', '');
  out.push(misses.length === 0 ? 'Every bar this study checks is met in every cell.' : misses.map((m) => `- ${m}`).join('\n'));
  out.push('');
  return out.join('\n');
}

/** The issue's routing bars for one cell: default within 1.15× of the oracle, no worse than the best peer, auto within 1.05× of the best fixed preset (any preset the cell runs, under its own or a peer's label). */
export function barMisses(group: string, cell: string, inCell: readonly StudyRow[]): string[] {
  const out: string[] = [];
  const by = (n: string) => inCell.find((r) => r.contender === n)?.summary;
  const def = by(DEFAULT);
  const oracle = by('oracle');
  const where = `${group} / ${cell}`;
  if (def !== undefined && oracle !== undefined) {
    for (const [q, a, b] of [
      ['p50', def.ttftP50Ms, oracle.ttftP50Ms],
      ['p99', def.ttftP99Ms, oracle.ttftP99Ms],
    ] as const)
      if (!(a <= 1.15 * b))
        out.push(`${where}: cache-aware TTFT ${q} ${fmt(a)} ms is ${fmt(a / b, 2)}× the oracle's ${fmt(b)} ms (bar 1.15×)`);
  }
  const peers = inCell.filter((r) => !r.contender.startsWith('cacheroute:') && !BOUNDS.has(r.contender));
  if (def !== undefined && peers.length > 0) {
    for (const q of ['ttftP50Ms', 'ttftP99Ms'] as const) {
      const best = peers.reduce((m, r) => (r.summary[q] < m.summary[q] ? r : m));
      if (def[q] > best.summary[q])
        out.push(
          `${where}: cache-aware TTFT ${q === 'ttftP50Ms' ? 'p50' : 'p99'} ${fmt(def[q])} ms is worse than ${best.contender}'s ${fmt(best.summary[q])} ms`,
        );
    }
  }
  const auto = by('cacheroute:auto');
  // Every fixed preset in the cell, whatever its label (round-robin and prefix-hash are presets too).
  const fixed = inCell.filter((r) => {
    const p = presetOf(r.contender);
    return p !== undefined && p !== 'auto';
  });
  if (auto !== undefined && fixed.length > 0) {
    for (const q of ['ttftP50Ms', 'ttftP99Ms'] as const) {
      const best = fixed.reduce((m, r) => (r.summary[q] < m.summary[q] ? r : m));
      if (!(auto[q] <= 1.05 * best.summary[q]))
        out.push(
          `${where}: auto TTFT ${q === 'ttftP50Ms' ? 'p50' : 'p99'} ${fmt(auto[q])} ms is ${fmt(auto[q] / best.summary[q], 2)}× ${best.contender}'s (bar 1.05×)`,
        );
    }
  }
  return out;
}
