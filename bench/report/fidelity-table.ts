/**
 * Real vs simulated: pairs the runs of a real-engine preset and of its simulator twin by
 * run id (block/scenario@qps/contender) and writes a markdown table of TTFT p50/p99,
 * engine token hit rate and success side by side, the ranking of the contenders by TTFT p50
 * per (block, rate) in both worlds, and the engines' cold and hit TTFT when cost files are given.
 *
 *   node dist/bench/report/fidelity-table.js --real bench/results/real-vllm --sim bench/results/real-vllm-sim \
 *     [--real-costs bench/results/real-vllm/engine-costs.json --sim-costs bench/results/real-vllm-sim/engine-costs.json] \
 *     [--out bench/results/real-vllm-sim/fidelity.md]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface Run {
  readonly id: string;
  readonly block: string;
  readonly scenario: { readonly label: string };
  readonly qps: number | null;
  readonly contender: { readonly label: string };
  readonly summary: {
    readonly success: { readonly successRate: number | null };
    readonly ttftMs: { readonly p50: number | null; readonly p99: number | null };
    /** Absent in results written before the cold/hit split. */
    readonly ttftColdMs?: { readonly p50: number | null; readonly count: number };
    readonly ttftHitMs?: { readonly p50: number | null; readonly count: number };
    readonly hits: { readonly engineTokenHitRate: number | null };
  };
}

interface Costs {
  readonly cold: ReadonlyArray<{ readonly words: number; readonly promptTokens: number; readonly ms: number; readonly hitMs: number }>;
  /** Prefix cached, then prefix + a fresh 120-word question (absent in older files). */
  readonly suffix?: ReadonlyArray<{ readonly prefixWords: number; readonly promptTokens: number; readonly cachedTokens: number; readonly ms: number }>;
}

function loadRuns(dir: string): Map<string, Run> {
  const doc = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: Run[] };
  return new Map(doc.runs.map((r) => [r.id, r]));
}

const ms = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`);
const pct = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : `${(v * 100).toFixed(1)}%`);
const ratio = (a: number | null | undefined, b: number | null | undefined): string => (a && b ? `${(b / a).toFixed(2)}×` : '–');

export function fidelityMarkdown(real: Map<string, Run>, sim: Map<string, Run>, realCosts?: Costs, simCosts?: Costs): string {
  const lines: string[] = [];
  if (realCosts && simCosts) {
    lines.push('## Engine: cold and prefix-hit TTFT (1-token completions, median of 3)', '');
    lines.push('| words | real tokens | real cold | sim cold | real hit | sim hit |', '|---|---|---|---|---|---|');
    for (const c of realCosts.cold) {
      const s = simCosts.cold.find((x) => x.words === c.words);
      lines.push(`| ${c.words} | ${c.promptTokens} | ${ms(c.ms)} | ${ms(s?.ms)} | ${ms(c.hitMs)} | ${ms(s?.hitMs)} |`);
    }
    lines.push('');
    if (realCosts.suffix !== undefined && simCosts.suffix !== undefined) {
      lines.push('Prefix cached, then the prefix with a fresh 120-word question:', '');
      lines.push('| prefix words | real tokens (cached) | real | sim |', '|---|---|---|---|');
      for (const c of realCosts.suffix) {
        const s = simCosts.suffix.find((x) => x.prefixWords === c.prefixWords);
        lines.push(`| ${c.prefixWords} | ${c.promptTokens} (${c.cachedTokens}) | ${ms(c.ms)} | ${ms(s?.ms)} |`);
      }
      lines.push('');
    }
  }
  lines.push('## Runs: real vs simulated', '');
  lines.push(
    'Cold = requests the engine reported no cached tokens for, hit = cached_tokens > 0 (p50, count in brackets).',
    '',
    '| run | success real / sim | TTFT p50 real | sim | sim÷real | TTFT p99 real | sim | sim÷real | cold TTFT real | sim | hit TTFT real | sim | token hit real | sim |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  const split = (d: { readonly p50: number | null; readonly count: number } | undefined): string => (d === undefined ? '–' : `${ms(d.p50)} (${d.count})`);
  for (const [id, r] of real) {
    const s = sim.get(id);
    if (s === undefined) continue; // only runs measured in both
    const a = r.summary;
    const b = s?.summary;
    lines.push(
      `| ${id} | ${pct(a.success.successRate)} / ${pct(b?.success.successRate)} | ${ms(a.ttftMs.p50)} | ${ms(b?.ttftMs.p50)} | ${ratio(a.ttftMs.p50, b?.ttftMs.p50)} | ${ms(a.ttftMs.p99)} | ${ms(b?.ttftMs.p99)} | ${ratio(a.ttftMs.p99, b?.ttftMs.p99)} | ${split(a.ttftColdMs)} | ${split(b?.ttftColdMs)} | ${split(a.ttftHitMs)} | ${split(b?.ttftHitMs)} | ${pct(a.hits.engineTokenHitRate)} | ${pct(b?.hits.engineTokenHitRate)} |`,
    );
  }
  lines.push('', '## Ranking by TTFT p50 (best first)', '', '| block / scenario @ rate | real | simulated | same order |', '|---|---|---|---|');
  const groups = new Map<string, Run[]>();
  for (const r of real.values()) {
    if (!sim.has(r.id)) continue;
    const k = `${r.block}/${r.scenario.label}@${r.qps ?? '-'}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  for (const [k, rs] of groups) {
    const order = (runs: Array<Run | undefined>): string[] =>
      runs
        .filter((x): x is Run => x !== undefined && x.summary.ttftMs.p50 !== null)
        .sort((x, y) => (x.summary.ttftMs.p50 ?? 0) - (y.summary.ttftMs.p50 ?? 0))
        .map((x) => x.contender.label);
    const ro = order(rs);
    const so = order(rs.map((r) => sim.get(r.id)));
    lines.push(`| ${k} | ${ro.join(' < ')} | ${so.join(' < ')} | ${ro.join() === so.join() ? 'yes' : 'no'} |`);
  }
  return `${lines.join('\n')}\n`;
}

function main(): void {
  const { values } = parseArgs({
    options: { real: { type: 'string' }, sim: { type: 'string' }, 'real-costs': { type: 'string' }, 'sim-costs': { type: 'string' }, out: { type: 'string' } },
  });
  if (!values.real || !values.sim) throw new Error('usage: fidelity-table --real DIR --sim DIR [--real-costs F --sim-costs F] [--out F]');
  const costs = (f: string | undefined): Costs | undefined => (f && existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as Costs) : undefined);
  const md = fidelityMarkdown(loadRuns(values.real), loadRuns(values.sim), costs(values['real-costs']), costs(values['sim-costs']));
  if (values.out) writeFileSync(values.out, md);
  else process.stdout.write(md);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
