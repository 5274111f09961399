/**
 * Interleaved rounds, pooled. At low load on real engines one run of a few dozen requests
 * cannot tell two routers apart: the same build's TTFT p50 moved 116 → 181 ms between two
 * runs (decision 0208). A preset that runs each contender
 * several times in interleaved order (labels `name#1`, `name#2`, …) is read here as one
 * sample per contender:
 *
 * - pooled percentiles over every round's successful requests;
 * - each cacheroute contender against the best peer router (lowest pooled p50 among
 *   sglang-router and vllm-router) by three estimators: the ratio of pooled p50s with
 *   90% bootstrap intervals (requests resampled within each round; and whole rounds
 *   resampled, which also covers run-to-run spread; seeded), the median of
 *   the per-round p50 ratios (round n against round n: drift of the machine cancels), and
 *   the median of per-request ratios (the workload is seeded, so request `id` in round n of
 *   one contender is the same request as in round n of the other), also over only the pairs
 *   whose engines reported the same cached tokens: what is left there is not cache hits but
 *   queueing behind other requests on the chosen engine, the path, the router and the machine;
 *   and over the pairs that were also sent to an idle fleet in both runs: the path and router.
 *
 * The request bootstrap says how much the pooled ratio would move with other draws of the
 * same requests; it does not cover drift between rounds (on real engines a run's p50 moves
 * more than that), which the round bootstrap and the per-round column show.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { seededRng, type Rng } from '../../src/util/rng.js';
import type { RequestRecord } from '../harness/driver.js';
import type { ExperimentResult } from '../harness/run-experiment.js';
import { parseRoundLabel } from '../presets/round-label.js';
import { quantileSorted } from '../../test/kit/percentiles.js';
import { fmtMs, fmtPct, fmtRatio, mdTable } from './format.js';

const PEER_KINDS = new Set(['sglang-router', 'vllm-router']);
/** Compared with the best peer. */
const COMPARED_KINDS = new Set(['cacheroute']);

export interface RoundRun {
  readonly block: string;
  readonly scenario: string;
  readonly qps: number | null;
  /** Contender label without the `#n` suffix. */
  readonly contender: string;
  readonly kind: string;
  readonly round: number;
  /** Successful requests' TTFT by request id. */
  readonly ttftById: ReadonlyMap<string, number>;
  /** Successful requests' engine-reported cached prompt tokens by request id (when reported). */
  readonly cachedById: ReadonlyMap<string, number>;
  /** Requests sent while no other request of the run was in flight (nothing to queue behind). */
  readonly aloneIds: ReadonlySet<string>;
  readonly engineTokenHit: number | null;
  readonly failed: number;
}

export interface PooledContender {
  readonly contender: string;
  readonly kind: string;
  readonly rounds: number;
  readonly requests: number;
  readonly failed: number;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
  readonly perRoundP50: ReadonlyArray<number | null>;
  /** Mean of the rounds' engine token hit rates. */
  readonly engineTokenHit: number | null;
}

export interface PooledComparison {
  readonly contender: string;
  readonly peer: string;
  /** Pooled p50 ÷ the peer's pooled p50. */
  readonly p50Ratio: number | null;
  /** 5th and 95th percentile of the bootstrapped pooled-p50 ratio (requests resampled within rounds). */
  readonly p50RatioInterval: readonly [number, number] | null;
  /**
   * The same with whole rounds resampled (round n of both together): covers the spread
   * between runs, which resampling requests within rounds does not; null under 3 paired rounds.
   */
  readonly p50RatioRoundInterval: readonly [number, number] | null;
  /** Round n's p50 ÷ the peer's round n p50, for rounds both ran. */
  readonly perRoundRatios: readonly number[];
  readonly medianRoundRatio: number | null;
  /** Median over requests present in both (same id, same round) of TTFT ÷ the peer's TTFT. */
  readonly medianRequestRatio: number | null;
  readonly pairedRequests: number;
  /**
   * The same over pairs whose engines reported the same cached tokens: the part of the gap
   * that cache hits do not explain (queueing on the chosen engine, path, router, machine).
   */
  readonly medianSameCacheRatio: number | null;
  readonly sameCachePairs: number;
  /**
   * The same over pairs that found the fleet idle in both runs and the same cached tokens:
   * no queueing and no cache difference, so what is left is the path and the router.
   */
  readonly medianAloneRatio: number | null;
  readonly alonePairs: number;
  readonly p99Ratio: number | null;
  /** Token hit difference in points (contender − peer). */
  readonly tokenHitPoints: number | null;
}

export interface PooledGroup {
  readonly block: string;
  readonly scenario: string;
  readonly qps: number | null;
  readonly contenders: readonly PooledContender[];
  readonly comparisons: readonly PooledComparison[];
}

export interface PoolOptions {
  readonly bootstrapSamples?: number;
  readonly seed?: number;
}

/** True when some contender ran more than one round: only then is a rounds report written. */
export function hasRounds(results: readonly ExperimentResult[]): boolean {
  return results.some((r) => parseRoundLabel(r.contender.label).round > 1);
}

const sorted = (xs: Iterable<number>): number[] => [...xs].sort((a, b) => a - b);
const median = (xs: readonly number[]): number | null => quantileSorted(sorted(xs), 0.5);
const ratio = (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a / b);

const roundP50 = (r: RoundRun): number | null => quantileSorted(sorted(r.ttftById.values()), 0.5);

function pooled(runs: readonly RoundRun[]): number[] {
  return sorted(runs.flatMap((r) => [...r.ttftById.values()]));
}

function pooledContender(runs: readonly RoundRun[]): PooledContender {
  const first = runs[0] as RoundRun;
  const all = pooled(runs);
  const hits = runs.map((r) => r.engineTokenHit).filter((h): h is number => h !== null);
  return {
    contender: first.contender,
    kind: first.kind,
    rounds: runs.length,
    requests: all.length,
    failed: runs.reduce((s, r) => s + r.failed, 0),
    p50: quantileSorted(all, 0.5),
    p90: quantileSorted(all, 0.9),
    p99: quantileSorted(all, 0.99),
    perRoundP50: runs.map(roundP50),
    engineTokenHit: hits.length === 0 ? null : hits.reduce((s, h) => s + h, 0) / hits.length,
  };
}

/** The pooled p50 of a resample: each round's requests drawn with replacement, same count. */
function resampledP50(rounds: ReadonlyArray<readonly number[]>, rng: Rng): number | null {
  const out: number[] = [];
  for (const xs of rounds) for (let i = 0; i < xs.length; i++) out.push(xs[rng.int(xs.length)] as number);
  return quantileSorted(
    out.sort((a, b) => a - b),
    0.5,
  );
}

/** 5th and 95th percentile of `samples` draws of a statistic (draws that give null are skipped). */
function interval90(samples: number, draw: () => number | null): readonly [number, number] | null {
  const values: number[] = [];
  for (let i = 0; i < samples; i++) {
    const v = draw();
    if (v !== null) values.push(v);
  }
  const s = sorted(values);
  const lo = quantileSorted(s, 0.05);
  const hi = quantileSorted(s, 0.95);
  return lo === null || hi === null ? null : [lo, hi];
}

/** Requests resampled within each round, the rounds kept. */
function bootstrapRatio(a: readonly RoundRun[], b: readonly RoundRun[], samples: number, rng: Rng): readonly [number, number] | null {
  const ra = a.map((r) => [...r.ttftById.values()]).filter((xs) => xs.length > 0);
  const rb = b.map((r) => [...r.ttftById.values()]).filter((xs) => xs.length > 0);
  if (ra.length === 0 || rb.length === 0) return null;
  return interval90(samples, () => ratio(resampledP50(ra, rng), resampledP50(rb, rng)));
}

/** Rounds resampled with replacement, each draw taking round n of both contenders together. */
function roundBootstrapRatio(
  pairs: ReadonlyArray<readonly [RoundRun, RoundRun]>,
  samples: number,
  rng: Rng,
): readonly [number, number] | null {
  if (pairs.length < 3) return null;
  return interval90(samples, () => {
    const xa: number[] = [];
    const xb: number[] = [];
    for (let k = 0; k < pairs.length; k++) {
      const [ra, rb] = pairs[rng.int(pairs.length)] as readonly [RoundRun, RoundRun];
      for (const v of ra.ttftById.values()) xa.push(v);
      for (const v of rb.ttftById.values()) xb.push(v);
    }
    return ratio(median(xa), median(xb));
  });
}

function compare(
  a: readonly RoundRun[],
  b: readonly RoundRun[],
  pa: PooledContender,
  pb: PooledContender,
  samples: number,
  rng: Rng,
): PooledComparison {
  const perRound: number[] = [];
  const perRequest: number[] = [];
  const sameCache: number[] = [];
  const alone: number[] = [];
  const pairs: Array<readonly [RoundRun, RoundRun]> = [];
  for (const ra of a) {
    const rb = b.find((r) => r.round === ra.round);
    if (rb === undefined) continue;
    pairs.push([ra, rb]);
    const v = ratio(roundP50(ra), roundP50(rb));
    if (v !== null) perRound.push(v);
    for (const [id, t] of ra.ttftById) {
      const u = rb.ttftById.get(id);
      if (u === undefined || u <= 0) continue;
      perRequest.push(t / u);
      const ca = ra.cachedById.get(id);
      if (ca === undefined || ca !== rb.cachedById.get(id)) continue;
      sameCache.push(t / u);
      if (ra.aloneIds.has(id) && rb.aloneIds.has(id)) alone.push(t / u);
    }
  }
  return {
    contender: pa.contender,
    peer: pb.contender,
    p50Ratio: ratio(pa.p50, pb.p50),
    p50RatioInterval: bootstrapRatio(a, b, samples, rng),
    p50RatioRoundInterval: roundBootstrapRatio(pairs, samples, rng),
    perRoundRatios: perRound,
    medianRoundRatio: median(perRound),
    medianRequestRatio: median(perRequest),
    pairedRequests: perRequest.length,
    medianSameCacheRatio: median(sameCache),
    sameCachePairs: sameCache.length,
    medianAloneRatio: median(alone),
    alonePairs: alone.length,
    p99Ratio: ratio(pa.p99, pb.p99),
    tokenHitPoints: pa.engineTokenHit === null || pb.engineTokenHit === null ? null : (pa.engineTokenHit - pb.engineTokenHit) * 100,
  };
}

/** Groups runs by (block, scenario, rate), pools each contender's rounds, compares cacheroute with the best peer. */
export function poolRounds(runs: readonly RoundRun[], opts: PoolOptions = {}): PooledGroup[] {
  const samples = opts.bootstrapSamples ?? 2000;
  const rng = seededRng(opts.seed ?? 1);
  const groups = new Map<string, RoundRun[]>();
  for (const r of runs) {
    const key = JSON.stringify([r.block, r.scenario, r.qps]);
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  const out: PooledGroup[] = [];
  for (const g of groups.values()) {
    const byContender = new Map<string, RoundRun[]>();
    for (const r of g) byContender.set(r.contender, [...(byContender.get(r.contender) ?? []), r]);
    for (const rs of byContender.values()) rs.sort((x, y) => x.round - y.round);
    const contenders = [...byContender.values()].map(pooledContender);
    const peers = contenders.filter((c) => PEER_KINDS.has(c.kind) && c.p50 !== null).sort((x, y) => (x.p50 as number) - (y.p50 as number));
    const best = peers[0];
    const comparisons =
      best === undefined
        ? []
        : contenders
            .filter((c) => COMPARED_KINDS.has(c.kind))
            .map((c) => compare(byContender.get(c.contender) ?? [], byContender.get(best.contender) ?? [], c, best, samples, rng));
    const first = g[0] as RoundRun;
    out.push({ block: first.block, scenario: first.scenario, qps: first.qps, contenders, comparisons });
  }
  return out;
}

/** Ids of the requests sent while no other request of the run was in flight. */
export function aloneRequests(records: readonly RequestRecord[]): Set<string> {
  const spans = records
    .filter((r) => r.endMs !== null)
    .map((r) => ({ id: r.id, start: r.scheduledMs + r.lagMs, end: r.endMs as number }))
    .sort((x, y) => x.start - y.start);
  const out = new Set<string>();
  let busyUntil = Number.NEGATIVE_INFINITY;
  for (const s of spans) {
    if (s.start >= busyUntil) out.add(s.id);
    busyUntil = Math.max(busyUntil, s.end);
  }
  return out;
}

/** One run's RoundRun from its result and its per-request records. */
export function roundRunOf(result: ExperimentResult, records: readonly RequestRecord[]): RoundRun {
  const { base, round } = parseRoundLabel(result.contender.label);
  const ttftById = new Map<string, number>();
  const cachedById = new Map<string, number>();
  let failed = 0;
  for (const rec of records) {
    if (rec.outcome !== 'ok' || rec.ttftMs === null) {
      failed++;
      continue;
    }
    ttftById.set(rec.id, rec.ttftMs);
    if (rec.cachedTokens !== null) cachedById.set(rec.id, rec.cachedTokens);
  }
  return {
    block: result.block,
    scenario: result.scenario.label,
    qps: result.qps,
    contender: base,
    kind: result.contender.kind,
    round,
    ttftById,
    cachedById,
    aloneIds: aloneRequests(records),
    engineTokenHit: result.summary.hits.engineTokenHitRate,
    failed,
  };
}

const interval = (v: readonly [number, number] | null): string => (v === null ? '–' : `${v[0].toFixed(2)}–${v[1].toFixed(2)}×`);

export function roundsMarkdown(groups: readonly PooledGroup[]): string {
  const lines: string[] = [
    '# Interleaved rounds, pooled',
    '',
    'Each contender ran in several interleaved rounds on the same engines and workload (labels `#n` in results.md; ' +
      'blocks with seedPerRound draw round n with seed + n − 1, the same for every contender of the round). ' +
      "Pooled = every round's successful requests together. Against the best peer router (lowest pooled TTFT p50): " +
      'the ratio of pooled p50s with two 90% bootstrap intervals (requests resampled within rounds; whole rounds resampled, ' +
      'which also covers the spread between runs), the median of the ' +
      'per-round p50 ratios (round n vs round n), the median per-request ratio (same request id in the same round) and ' +
      'the same over the pairs whose engines reported equal cached tokens (what cache hits do not explain: queueing on the ' +
      'chosen engine, the path, the router and the machine), and over the pairs that were also sent while nothing else was ' +
      'in flight in both runs (no queueing: the path and the router).',
    '',
  ];
  for (const g of groups) {
    lines.push(`## ${g.block} / ${g.scenario}${g.qps !== null ? ` @ ${g.qps} req/s` : ''}`, '');
    lines.push(
      mdTable(
        ['contender', 'rounds', 'requests', 'failed', 'TTFT p50', 'p90', 'p99', 'p50 per round', 'engine tok hit (mean)'],
        g.contenders.map((c) => [
          c.contender,
          String(c.rounds),
          String(c.requests),
          String(c.failed),
          fmtMs(c.p50),
          fmtMs(c.p90),
          fmtMs(c.p99),
          c.perRoundP50.map((v) => fmtMs(v)).join(' / '),
          fmtPct(c.engineTokenHit),
        ]),
      ),
      '',
    );
    if (g.comparisons.length > 0) {
      lines.push(
        mdTable(
          [
            'contender ÷ best peer',
            'pooled p50 ratio',
            '90% interval (requests)',
            '90% interval (rounds)',
            'per-round p50 ratios',
            'median round ratio',
            'median request ratio (pairs)',
            'same cached tokens (pairs)',
            'sent to an idle fleet, same cached (pairs)',
            'pooled p99 ratio',
            'token hit (points)',
          ],
          g.comparisons.map((c) => [
            `${c.contender} ÷ ${c.peer}`,
            fmtRatio(c.p50Ratio),
            interval(c.p50RatioInterval),
            interval(c.p50RatioRoundInterval),
            c.perRoundRatios.map((v) => v.toFixed(2)).join(' / '),
            fmtRatio(c.medianRoundRatio),
            `${fmtRatio(c.medianRequestRatio)} (${c.pairedRequests})`,
            `${fmtRatio(c.medianSameCacheRatio)} (${c.sameCachePairs})`,
            `${fmtRatio(c.medianAloneRatio)} (${c.alonePairs})`,
            fmtRatio(c.p99Ratio),
            c.tokenHitPoints === null ? '–' : `${c.tokenHitPoints >= 0 ? '+' : ''}${c.tokenHitPoints.toFixed(1)}`,
          ]),
        ),
        '',
      );
    }
  }
  return lines.join('\n');
}

/** Writes rounds.md and rounds.json beside results.md when some contender ran several rounds. */
export function writeRoundsReport(outDir: string, runs: readonly RoundRun[]): void {
  const groups = poolRounds(runs);
  writeFileSync(join(outDir, 'rounds.json'), JSON.stringify({ groups }, null, 1) + '\n');
  writeFileSync(join(outDir, 'rounds.md'), roundsMarkdown(groups) + '\n');
}
