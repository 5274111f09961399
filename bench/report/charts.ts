/**
 * Which charts a preset's results produce: for every block with a QPS sweep, TTFT p50 and
 * p99 against offered load (one line per contender, log scale); for every block, request-
 * and token-level hit rate per scenario (bars per contender).
 */
import type { ExperimentResult } from '../harness/run-experiment.js';
import { barChart, lineChart } from './svg-chart.js';

export interface Chart {
  readonly block: string;
  readonly file: string;
  readonly title: string;
  readonly svg: string;
}

function contenderOrder(results: readonly ExperimentResult[]): string[] {
  const out: string[] = [];
  for (const r of results) if (!out.includes(r.contender.label)) out.push(r.contender.label);
  return out;
}

function safe(s: string): string {
  return s.replace(/[^a-zA-Z0-9._-]+/g, '-');
}

function scenarioCategory(r: ExperimentResult, sweep: boolean): string {
  return sweep && r.qps !== null ? `${r.scenario.label} @${r.qps}` : r.scenario.label;
}

export function buildCharts(results: readonly ExperimentResult[]): Chart[] {
  const charts: Chart[] = [];
  const blocks = [...new Set(results.map((r) => r.block))];
  const allContenders = contenderOrder(results);
  const colorOf = (label: string): number => allContenders.indexOf(label);
  for (const block of blocks) {
    const rs = results.filter((r) => r.block === block);
    const contenders = contenderOrder(rs);
    const scenarios = [...new Set(rs.map((r) => r.scenario.label))];
    const rates = new Set(rs.map((r) => r.qps));
    const sweep = rates.size > 1;
    if (sweep) {
      for (const sc of scenarios) {
        for (const [q, key] of [
          ['p50', 'p50'],
          ['p99', 'p99'],
        ] as const) {
          const series = contenders.map((c) => ({
            name: c,
            color: colorOf(c),
            points: rs
              .filter((r) => r.scenario.label === sc && r.contender.label === c && r.qps !== null)
              .map((r) => [r.qps as number, r.error === null ? r.summary.ttftMs[key] : null] as const),
          }));
          const title = `${block} / ${sc}: TTFT ${q} vs offered load`;
          charts.push({
            block,
            file: `ttft-${q}-vs-qps-${safe(block)}-${safe(sc)}.svg`,
            title,
            svg: lineChart({ title, xLabel: 'offered load (req/s)', yLabel: `TTFT ${q} (ms, log scale)`, series, logY: true }),
          });
        }
      }
    }
    const cats: string[] = [];
    for (const r of rs) {
      const c = scenarioCategory(r, sweep);
      if (!cats.includes(c)) cats.push(c);
    }
    for (const [kind, pick, label] of [
      ['request', (r: ExperimentResult) => r.summary.hits.requestHitRate, 'request-level hit rate (cached_tokens > 0)'],
      ['token', (r: ExperimentResult) => r.summary.hits.engineTokenHitRate, 'token-level hit rate (engine hits / queries)'],
    ] as const) {
      const series = contenders.map((c) => ({
        name: c,
        color: colorOf(c),
        values: cats.map((cat) => {
          const r = rs.find((x) => x.contender.label === c && scenarioCategory(x, sweep) === cat);
          return r && r.error === null ? pick(r) : null;
        }),
      }));
      const title = `${block}: ${label}`;
      charts.push({
        block,
        file: `hit-rate-${kind}-${safe(block)}.svg`,
        title,
        svg: barChart({ title, yLabel: 'hit rate', categories: cats, series, yMax: 1, valueLabel: (v) => `${Math.round(v * 100)}%` }),
      });
    }
  }
  return charts;
}
