/**
 * The project's stated targets, checked against a preset's results. Each check says what
 * it compared, so a FAIL is as informative as a PASS; checks whose runs are not in the
 * preset are simply absent.
 */
import type { ExperimentResult } from '../harness/run-experiment.js';
import { fmtMs, fmtPct, fmtRatio } from './format.js';
import { replicaChecks } from './replica-bars.js';

export type TargetStatus = 'PASS' | 'FAIL' | 'n/a';

export interface TargetCheck {
  readonly target: string;
  readonly status: TargetStatus;
  readonly detail: string;
}

/** Relative slack allowed when comparing latencies across contenders (run-to-run noise). */
export const LATENCY_TOLERANCE = 0.1;

const isCacheroute = (r: ExperimentResult, strategy: string): boolean =>
  r.contender.kind === 'cacheroute' && r.contender.strategy === strategy;
const ratioOf = (r: ExperimentResult): number | undefined => {
  const v = r.workload.params['ratio'];
  return typeof v === 'number' ? v : undefined;
};
const usable = (r: ExperimentResult): boolean => r.error === null;
const at = (r: ExperimentResult): string => ` (${r.block}${r.qps !== null ? `, ${r.qps} req/s` : ''})`;

function rrHit(results: readonly ExperimentResult[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  for (const r of results) {
    if (!usable(r) || !isCacheroute(r, 'round-robin') || r.scenario.kind !== 'sharing-ratio') continue;
    const ratio = ratioOf(r);
    if (ratio === undefined || ratio === 0) continue;
    const n = r.engines.count;
    const hit = r.summary.hits.requestHitRate;
    const ok = hit !== null && Math.abs(hit - 1 / n) <= 0.5 / n;
    out.push({
      target: `round-robin hit ≈ 1/N at ${Math.round(ratio * 100)}% sharing${at(r)}`,
      status: hit === null ? 'n/a' : ok ? 'PASS' : 'FAIL',
      detail: `request-level hit ${fmtPct(hit)} vs 1/N = ${fmtPct(1 / n)} (pass band ±${fmtPct(0.5 / n)}); engine token hit ${fmtPct(r.summary.hits.engineTokenHitRate)}`,
    });
  }
  return out;
}

function cacheAwareHit(results: readonly ExperimentResult[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  const goals: Array<[number, number]> = [
    [0.5, 0.9],
    [0.9, 0.97],
  ];
  for (const r of results) {
    if (!usable(r) || !isCacheroute(r, 'cache-aware') || r.scenario.kind !== 'sharing-ratio') continue;
    const ratio = ratioOf(r);
    const goal = goals.find(([g]) => g === ratio);
    if (!goal) continue;
    const hit = r.summary.hits.requestHitRate;
    out.push({
      target: `cache-aware request-level hit ≥ ${fmtPct(goal[1], 0)} at ${Math.round(goal[0] * 100)}% sharing${at(r)}`,
      status: hit === null ? 'n/a' : hit >= goal[1] ? 'PASS' : 'FAIL',
      detail: `${fmtPct(hit)} (ceiling ${fmtPct(r.summary.hits.requestHitCeiling)}; success ${fmtPct(r.summary.success.successRate)})`,
    });
  }
  return out;
}

function hotPrefix(results: readonly ExperimentResult[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  const hot = results.filter((r) => usable(r) && r.scenario.kind === 'hot-prefix');
  for (const ca of hot.filter((r) => isCacheroute(r, 'cache-aware'))) {
    const ph = hot.find(
      (r) => isCacheroute(r, 'prefix-hash') && r.block === ca.block && r.scenario.label === ca.scenario.label && r.qps === ca.qps,
    );
    if (!ph) continue;
    const a = ca.summary.ttftMs.p99;
    const b = ph.summary.ttftMs.p99;
    const ha = ca.summary.hits.engineTokenHitRate;
    const hb = ph.summary.hits.engineTokenHitRate;
    const latOk = a !== null && b !== null && a <= 0.5 * b;
    const hitOk = ha !== null && hb !== null && Math.abs(ha - hb) <= 0.05;
    const full = (ca.summary.success.successRate ?? 0) === 1;
    out.push({
      target: `hot prefix: cache-aware p99 TTFT ≤ 0.5× prefix-hash, hit within 5 points${at(ca)}`,
      status: a === null || b === null || ha === null || hb === null ? 'n/a' : latOk && hitOk && full ? 'PASS' : 'FAIL',
      detail: `p99 ${fmtMs(a)} vs ${fmtMs(b)} (${fmtRatio(a !== null && b ? a / b : null)}); engine token hit ${fmtPct(ha)} vs ${fmtPct(hb)}; cache-aware success ${fmtPct(ca.summary.success.successRate)}`,
    });
  }
  return out;
}

/**
 * The highest swept rate at which some contender still keeps up: 100% success and
 * completed requests/s at least 90% of the offered rate.
 */
export function saturationQps(sweep: readonly ExperimentResult[]): number | null {
  let best: number | null = null;
  for (const r of sweep) {
    if (r.qps === null || !usable(r)) continue;
    const keepsUp = r.summary.success.successRate === 1 && r.summary.reqPerS >= 0.9 * r.qps;
    if (keepsUp && (best === null || r.qps > best)) best = r.qps;
  }
  return best;
}

function versusPeers(results: readonly ExperimentResult[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  const groups = new Map<string, ExperimentResult[]>();
  for (const r of results) {
    if (r.qps === null) continue;
    const key = `${r.block}/${r.scenario.label}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const [key, sweep] of groups) {
    const hasPeers = sweep.some((r) => r.contender.kind === 'sglang-router' || r.contender.kind === 'vllm-router');
    if (!hasPeers || !sweep.some((r) => isCacheroute(r, 'cache-aware'))) continue;
    const sat = saturationQps(sweep);
    const rates = [...new Set(sweep.map((r) => r.qps as number))].sort((a, b) => a - b).filter((q) => sat === null || q <= sat);
    for (const q of rates) {
      const at = sweep.filter((r) => r.qps === q);
      const ca = at.find((r) => isCacheroute(r, 'cache-aware'));
      const peers = at.filter((r) => (r.contender.kind === 'sglang-router' || r.contender.kind === 'vllm-router') && usable(r));
      if (!ca || peers.length === 0) continue;
      const best = (pick: (r: ExperimentResult) => number | null): number | null => {
        const vs = peers.map(pick).filter((v): v is number => v !== null);
        return vs.length ? Math.min(...vs) : null;
      };
      const p50 = ca.summary.ttftMs.p50;
      const p99 = ca.summary.ttftMs.p99;
      const b50 = best((r) => r.summary.ttftMs.p50);
      const b99 = best((r) => r.summary.ttftMs.p99);
      const full = ca.summary.success.successRate === 1;
      const ok50 = p50 !== null && b50 !== null && p50 <= b50 * (1 + LATENCY_TOLERANCE);
      const ok99 = p99 !== null && b99 !== null && p99 <= b99 * (1 + LATENCY_TOLERANCE);
      out.push({
        target: `${key} @ ${q} req/s: cache-aware 100% success, TTFT p50/p99 ≤ best peer (+${LATENCY_TOLERANCE * 100}%)`,
        status: p50 === null || b50 === null ? 'n/a' : full && ok50 && ok99 ? 'PASS' : 'FAIL',
        detail: `success ${fmtPct(ca.summary.success.successRate)}; p50 ${fmtMs(p50)} vs best peer ${fmtMs(b50)} (${fmtRatio(p50 !== null && b50 ? p50 / b50 : null)}); p99 ${fmtMs(p99)} vs ${fmtMs(b99)} (${fmtRatio(p99 !== null && b99 ? p99 / b99 : null)})${sat === null ? '; no swept rate kept up, all rates checked' : `; saturation ≈ ${sat} req/s`}`,
      });
    }
  }
  return out;
}

export function checkTargets(results: readonly ExperimentResult[]): TargetCheck[] {
  return [...rrHit(results), ...cacheAwareHit(results), ...hotPrefix(results), ...versusPeers(results), ...replicaChecks(results)];
}

export interface AddedLatency {
  readonly where: string;
  readonly qps: number | null;
  readonly routerP50: number | null;
  readonly envoyP50: number | null;
  readonly deltaMs: number | null;
}

/**
 * The router's added latency: cacheroute round-robin (Envoy + ext_proc) against Envoy's
 * own round-robin on the same workload, at the lowest rate available (least queueing).
 */
export function addedLatency(results: readonly ExperimentResult[]): AddedLatency[] {
  const out: AddedLatency[] = [];
  const seen = new Set<string>();
  const sorted = [...results].sort((a, b) => (a.qps ?? 0) - (b.qps ?? 0));
  for (const rr of sorted) {
    if (!usable(rr) || !isCacheroute(rr, 'round-robin')) continue;
    const key = `${rr.block}/${rr.scenario.label}`;
    if (seen.has(key)) continue;
    const env = sorted.find(
      (r) =>
        usable(r) &&
        r.contender.kind === 'envoy-only' &&
        r.contender.strategy === 'round-robin' &&
        r.block === rr.block &&
        r.scenario.label === rr.scenario.label &&
        r.qps === rr.qps,
    );
    if (!env) continue;
    seen.add(key);
    const a = rr.summary.ttftMs.p50;
    const b = env.summary.ttftMs.p50;
    out.push({ where: key, qps: rr.qps, routerP50: a, envoyP50: b, deltaMs: a !== null && b !== null ? a - b : null });
  }
  return out;
}
