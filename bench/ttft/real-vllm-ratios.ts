/**
 * Reads a committed `real-vllm-ttft` run (bench/results/real-vllm-ttft/results.json) and
 * writes the comparison the TTFT bars ask for: per interleaved round, each predicted-ttft
 * contender's TTFT p50 and p99 ÷ cache-aware's in the same round (the round-to-round range
 * is the interval: with 90 requests per run a request bootstrap would hide the drift between
 * runs, which on these engines is larger), and the per-engine median absolute percentage
 * error of the TTFT model's online predictions from the router's metrics (the run notes).
 *
 *   npx tsc -p tsconfig.json && node dist/bench/ttft/real-vllm-ratios.js [--in DIR] [--out FILE]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRoundLabel } from '../presets/round-label.js';
import { arg } from '../micro/cli-arg.js';

interface Run {
  readonly contender: { readonly label: string };
  readonly summary: { readonly ttftMs: { readonly p50: number; readonly p99: number } | null };
  readonly notes: readonly string[];
}

const REFERENCE = 'cacheroute-cache-aware';

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

const x = (v: number): string => `${v.toFixed(2)}×`;

function main(): void {
  const args = process.argv.slice(2);
  const dir = arg(args, '--in') ?? join('bench', 'results', 'real-vllm-ttft');
  const out = arg(args, '--out') ?? join('bench', 'results', 'real-vllm-ttft', 'ratios.md');
  const doc = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { runs: Run[] };
  const byRound = new Map<number, Map<string, Run>>();
  for (const r of doc.runs) {
    const { base, round } = parseRoundLabel(r.contender.label);
    if (!byRound.has(round)) byRound.set(round, new Map());
    byRound.get(round)!.set(base, r);
  }
  const rounds = [...byRound.keys()].sort((a, b) => a - b);
  const bases = [...new Set(doc.runs.map((r) => parseRoundLabel(r.contender.label).base))].filter((b) => b !== REFERENCE);
  const lines = [
    '# predicted-ttft on real vLLM engines, against the default',
    '',
    `From \`${dir}/results.json\` (\`npm run bench -- --preset real-vllm-ttft\`); \`node dist/bench/ttft/real-vllm-ratios.js\`.`,
    `Per round: the contender's TTFT percentile ÷ ${REFERENCE}'s in the same round (same seed, same engines). Interval = the range over rounds.`,
    '',
    '| contender | p50 ÷ default per round | p50 median [min, max] | p99 ÷ default per round | p99 median [min, max] |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const b of bases) {
    const p50: number[] = [];
    const p99: number[] = [];
    for (const n of rounds) {
      const c = byRound.get(n)?.get(b)?.summary.ttftMs;
      const ref = byRound.get(n)?.get(REFERENCE)?.summary.ttftMs;
      if (c == null || ref == null) continue;
      p50.push(c.p50 / ref.p50);
      p99.push(c.p99 / ref.p99);
    }
    if (p50.length === 0) continue;
    const range = (v: number[]): string => `${x(median(v))} [${x(Math.min(...v))}, ${x(Math.max(...v))}]`;
    lines.push(`| ${b} | ${p50.map(x).join(' / ')} | ${range(p50)} | ${p99.map(x).join(' / ')} | ${range(p99)} |`);
  }
  lines.push('', '## Online prediction error per engine (median absolute percentage error, router metrics)', '');
  lines.push('| run | engine | first tokens | median APE | mean APE |', '| --- | --- | --- | --- | --- |');
  const NOTE = /([0-9.]+:\d+): (\d+) first tokens, mean APE ([0-9.]+)%, median APE \(last \d+\) ([0-9.]+)%/g;
  for (const r of doc.runs) {
    const note = r.notes.find((n) => n.startsWith('ttft model:'));
    if (note === undefined) continue;
    for (const m of note.matchAll(NOTE)) {
      lines.push(`| ${r.contender.label} | ${m[1]} | ${m[2]} | ${m[4]}% | ${m[3]}% |`);
    }
  }
  writeFileSync(out, `${lines.join('\n')}\n`);
  process.stderr.write(`wrote ${out}\n`);
}

main();
