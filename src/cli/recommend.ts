/**
 * Ranks the strategies a trace was replayed with and names the one to use. The rule, in
 * the order a user feels it: a strategy that failed requests the others served is out;
 * then the lowest TTFT p99 (the tail is what users notice and what bad routing inflates
 * first: queues behind a hot engine); strategies within `TIE` of the best p99 count as
 * tied — closer than the trace and the engine model can tell apart — and among them the
 * lowest TTFT p50 wins, then the higher cache hit rate.
 */

/** What a row needs (src/simulate/summary.ts SimSummary has these fields). */
export interface RankedRow {
  readonly label: string;
  readonly failed: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  readonly hitRate: number;
  readonly busiestShare: number;
}

/** Relative distance on p99 under which two strategies count as tied. */
export const TIE = 0.05;

const finiteOr = (v: number, d: number): number => (Number.isFinite(v) ? v : d);

/** Rows best first, by the rule above. */
export function rank<R extends RankedRow>(rows: readonly R[]): R[] {
  const fewestFailed = Math.min(...rows.map((r) => r.failed));
  const eligible = rows.filter((r) => r.failed === fewestFailed);
  const rest = rows.filter((r) => r.failed !== fewestFailed).sort((a, b) => a.failed - b.failed);
  const bestP99 = Math.min(...eligible.map((r) => finiteOr(r.ttftP99Ms, Infinity)));
  const tied = (r: R): boolean => finiteOr(r.ttftP99Ms, Infinity) <= bestP99 * (1 + TIE);
  const byP50 = (a: R, b: R): number =>
    finiteOr(a.ttftP50Ms, Infinity) - finiteOr(b.ttftP50Ms, Infinity) || b.hitRate - a.hitRate || a.label.localeCompare(b.label);
  const first = eligible.filter(tied).sort(byP50);
  const second = eligible
    .filter((r) => !tied(r))
    .sort((a, b) => finiteOr(a.ttftP99Ms, Infinity) - finiteOr(b.ttftP99Ms, Infinity) || byP50(a, b));
  return [...first, ...second, ...rest];
}

/** One sentence saying what to use and why, from ranked rows. */
export function recommendation(ranked: readonly RankedRow[]): string {
  const best = ranked[0];
  if (best === undefined) return 'no strategy ran';
  const next = ranked[1];
  const p99 = (r: RankedRow): string => `${r.ttftP99Ms.toFixed(1)} ms`;
  if (next === undefined) return `use ${best.label} (TTFT p99 ${p99(best)})`;
  if (next.failed > best.failed) return `use ${best.label}: it failed ${best.failed} requests, ${next.label} failed ${next.failed}`;
  const ratio = next.ttftP99Ms / best.ttftP99Ms;
  if (ratio <= 1 + TIE) {
    return `use ${best.label}: TTFT p99 ${p99(best)}, tied with ${next.label} (${p99(next)}, within ${TIE * 100}%), lower p50 (${best.ttftP50Ms.toFixed(1)} vs ${next.ttftP50Ms.toFixed(1)} ms)`;
  }
  return `use ${best.label}: TTFT p99 ${p99(best)}, ${ratio.toFixed(2)}x better than the next best (${next.label}, ${p99(next)})`;
}
