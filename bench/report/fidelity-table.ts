/**
 * Real vs simulated: pairs the runs of a real-engine preset and of its simulator twin by
 * run id (block/scenario@qps/contender) and writes a markdown table of TTFT p50/p99,
 * engine token hit rate and success side by side, the ranking of the contenders by TTFT p50
 * per (block, rate) in both worlds, and the engines' cold and hit TTFT when cost files are given.
 *
 *   npm run bench -- fidelity --real bench/results/real-vllm --sim bench/results/real-vllm-sim \
 *     [--real-costs bench/results/real-vllm/engine-costs.json --sim-costs bench/results/real-vllm-sim/engine-costs.json] \
 *     [--real-costs <measure-costs --only loaded|context file> --sim-costs <the same, simulated> ...] \
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
  readonly cold?: ReadonlyArray<{ readonly words: number; readonly promptTokens: number; readonly ms: number; readonly hitMs: number }>;
  /** A 4-word text completion's round trip. */
  readonly tinyMs?: number;
  /** A 4-word streamed chat's TTFT (`--only loaded`). */
  readonly chatTinyMs?: number;
  readonly loaded?: ReadonlyArray<{
    readonly streams: number;
    readonly ttftMs: number;
    readonly promptTokens: number;
    readonly cachedTokens: number;
  }>;
  readonly contextGrid?: ReadonlyArray<{ readonly cachedTokens: number; readonly tailTokens: number; readonly ms: number }>;
  /** Prefix cached, then prefix + a fresh 120-word question (absent in older files). */
  readonly suffix?: ReadonlyArray<{
    readonly prefixWords: number;
    readonly promptTokens: number;
    readonly cachedTokens: number;
    readonly ms: number;
  }>;
}

function loadRuns(dir: string): Map<string, Run> {
  const doc = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: Run[] };
  return new Map(doc.runs.map((r) => [r.id, r]));
}

const ms = (v: number | null | undefined): string =>
  v === null || v === undefined ? '–' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`;
const pct = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : `${(v * 100).toFixed(1)}%`);
const ratio = (a: number | null | undefined, b: number | null | undefined): string => (a && b ? `${(b / a).toFixed(2)}×` : '–');

export function fidelityMarkdown(real: Map<string, Run>, sim: Map<string, Run>, realCosts?: Costs, simCosts?: Costs): string {
  const lines: string[] = [];
  if (realCosts?.cold && simCosts?.cold) {
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
  if (realCosts && simCosts) lines.push(...engineUnderLoad(realCosts, simCosts));
  lines.push('## Runs: real vs simulated', '');
  lines.push(
    'Cold = requests the engine reported no cached tokens for, hit = cached_tokens > 0 (p50, count in brackets).',
    '',
    '| run | success real / sim | TTFT p50 real | sim | sim÷real | TTFT p99 real | sim | sim÷real | cold TTFT real | sim | hit TTFT real | sim | token hit real | sim |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  const split = (d: { readonly p50: number | null; readonly count: number } | undefined): string =>
    d === undefined ? '–' : `${ms(d.p50)} (${d.count})`;
  for (const [id, r] of real) {
    const s = sim.get(id);
    if (s === undefined) continue; // only runs measured in both
    const a = r.summary;
    const b = s?.summary;
    lines.push(
      `| ${id} | ${pct(a.success.successRate)} / ${pct(b?.success.successRate)} | ${ms(a.ttftMs.p50)} | ${ms(b?.ttftMs.p50)} | ${ratio(a.ttftMs.p50, b?.ttftMs.p50)} | ${ms(a.ttftMs.p99)} | ${ms(b?.ttftMs.p99)} | ${ratio(a.ttftMs.p99, b?.ttftMs.p99)} | ${split(a.ttftColdMs)} | ${split(b?.ttftColdMs)} | ${split(a.ttftHitMs)} | ${split(b?.ttftHitMs)} | ${pct(a.hits.engineTokenHitRate)} | ${pct(b?.hits.engineTokenHitRate)} |`,
    );
  }
  lines.push(
    '',
    '## Ranking by TTFT p50 (best first)',
    '',
    '| block / scenario @ rate | real | simulated | same order |',
    '|---|---|---|---|',
  );
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

/** The fixed cost of a text request, the benchmarks' request under decode load, and exact-token hits. */
function engineUnderLoad(real: Costs, sim: Costs): string[] {
  const lines: string[] = [];
  if (real.tinyMs !== undefined || real.chatTinyMs !== undefined) {
    lines.push('A 4-word text prompt (the fixed cost of a request):', '', '| request | real | sim |', '|---|---|---|');
    if (real.tinyMs !== undefined) lines.push(`| completion, round trip | ${ms(real.tinyMs)} | ${ms(sim.tinyMs)} |`);
    if (real.chatTinyMs !== undefined) lines.push(`| streamed chat, TTFT | ${ms(real.chatTinyMs)} | ${ms(sim.chatTinyMs)} |`);
    lines.push('');
  }
  if (real.loaded !== undefined && sim.loaded !== undefined) {
    lines.push(
      "The benchmarks' shared-prefix request (streamed chat, 900-word system prompt cached, fresh 120-word question) while other streams decode (TTFT, median of 3):",
      '',
      '| other streams | real tokens (cached) | real | sim | sim÷real |',
      '|---|---|---|---|---|',
    );
    for (const r of real.loaded) {
      const s = sim.loaded.find((x) => x.streams === r.streams);
      lines.push(
        `| ${r.streams} | ${r.promptTokens} (${r.cachedTokens}) | ${ms(r.ttftMs)} | ${ms(s?.ttftMs)} | ${ratio(r.ttftMs, s?.ttftMs)} |`,
      );
    }
    lines.push('');
  }
  if (real.contextGrid !== undefined && sim.contextGrid !== undefined) {
    const tails = [...new Set(real.contextGrid.map((g) => g.tailTokens))];
    lines.push(
      'Prefix hits in exact tokens (token-id prompts, 1-token completions, median of 3): real / sim per fresh tail:',
      '',
      `| cached tokens | ${tails.map((t) => `tail ${t}`).join(' | ')} |`,
      `|---|${tails.map(() => '---|').join('')}`,
    );
    for (const cached of [...new Set(real.contextGrid.map((g) => g.cachedTokens))]) {
      const cell = (t: number): string => {
        const r = real.contextGrid!.find((g) => g.cachedTokens === cached && g.tailTokens === t);
        const s = sim.contextGrid!.find((g) => g.cachedTokens === cached && g.tailTokens === t);
        return `${ms(r?.ms)} / ${ms(s?.ms)}`;
      };
      lines.push(`| ${cached} | ${tails.map(cell).join(' | ')} |`);
    }
    lines.push('');
  }
  return lines;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      real: { type: 'string' },
      sim: { type: 'string' },
      'real-costs': { type: 'string', multiple: true },
      'sim-costs': { type: 'string', multiple: true },
      out: { type: 'string' },
    },
  });
  if (!values.real || !values.sim)
    throw new Error('usage: fidelity-table --real DIR --sim DIR [--real-costs F --sim-costs F ...] [--out F]');
  // Several cost files (a full measurement, `--only loaded`, `--only context`) merge into one.
  const costs = (fs: readonly string[] | undefined): Costs | undefined => {
    const docs = (fs ?? []).filter((f) => existsSync(f)).map((f) => JSON.parse(readFileSync(f, 'utf8')) as Costs);
    return docs.length === 0 ? undefined : (Object.assign({}, ...docs) as Costs);
  };
  const md = fidelityMarkdown(loadRuns(values.real), loadRuns(values.sim), costs(values['real-costs']), costs(values['sim-costs']));
  if (values.out) writeFileSync(values.out, md);
  else process.stdout.write(md);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
