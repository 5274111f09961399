/**
 * Side-by-side variants: when a block runs the same cacheroute strategy more than once
 * (different router overrides, e.g. hot-prefix replication on and off), each later
 * contender is compared with the first one of that strategy on the same scenario and
 * rate, as ratios (variant ÷ base). Runs in one preset share engines, seed, workload and
 * time window, so these ratios are the fair comparison of a configuration change.
 */
import type { ExperimentResult } from '../harness/run-experiment.js';

export interface VariantRatio {
  /** block/scenario */
  readonly where: string;
  readonly qps: number | null;
  readonly base: string;
  readonly variant: string;
  /** variant ÷ base; null when either side is missing. */
  readonly ttftP50: number | null;
  readonly ttftP99: number | null;
  readonly successRate: number | null;
  readonly reqPerS: number | null;
  readonly engineTokenHit: number | null;
  /** variant − base, in fractions (0.01 = one point). */
  readonly engineTokenHitDelta: number | null;
  readonly requestHitDelta: number | null;
}

const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? null : a / b;
const delta = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined ? null : a - b;

export function variantRatios(results: readonly ExperimentResult[]): VariantRatio[] {
  const groups = new Map<string, ExperimentResult[]>();
  for (const r of results) {
    if (r.contender.kind !== 'cacheroute' || r.error !== null) continue;
    const key = `${r.block}\u0000${r.scenario.label}\u0000${r.qps ?? 'trace'}\u0000${r.contender.strategy}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const out: VariantRatio[] = [];
  for (const rs of groups.values()) {
    const [base, ...variants] = rs;
    if (!base) continue;
    for (const v of variants) {
      const a = v.summary;
      const b = base.summary;
      out.push({
        where: `${base.block}/${base.scenario.label}`,
        qps: base.qps,
        base: base.contender.label,
        variant: v.contender.label,
        ttftP50: ratio(a.ttftMs.p50, b.ttftMs.p50),
        ttftP99: ratio(a.ttftMs.p99, b.ttftMs.p99),
        successRate: ratio(a.success.successRate, b.success.successRate),
        reqPerS: ratio(a.reqPerS, b.reqPerS),
        engineTokenHit: ratio(a.hits.engineTokenHitRate, b.hits.engineTokenHitRate),
        engineTokenHitDelta: delta(a.hits.engineTokenHitRate, b.hits.engineTokenHitRate),
        requestHitDelta: delta(a.hits.requestHitRate, b.hits.requestHitRate),
      });
    }
  }
  return out;
}
