/**
 * Issue 13's bars, checked on the `replicas` preset's runs (bench/presets/replicas.ts);
 * each check names what it compared. Absent runs give no check; a run whose facts cannot
 * decide a bar gives `n/a` with the reason. Also the per-run replica table of results.md.
 */
import type { ExperimentResult } from '../harness/run-experiment.js';
import type { ReplicaFacts, SecondSums } from '../harness/replica-run.js';
import { fmtMs, fmtNum, fmtPct, fmtRatio, mdTable, NA } from './format.js';
import type { TargetCheck, TargetStatus } from './targets.js';

export const REPLICA_BARS = {
  scaleHitPoints: 0.02,
  scaleTtftRatio: 1.1,
  rejoinAccuracy: 0.9,
  rejoinWithinMs: 5000,
  natsHitPoints: 0.05,
  reconvergeMs: 5000,
  /** Issue #25: router CPU per request within 1.1× of the baseline's (061ba1c, the preset's default). */
  cpuRatio: 1.1,
  lowLoadTtftRatio: 1.05,
} as const;

const find = (rs: readonly ExperimentResult[], block: string, label: string): ExperimentResult | undefined =>
  rs.find((r) => r.block === block && r.contender.label === label && r.error === null);
const status = (known: boolean, ok: boolean): TargetStatus => (!known ? 'n/a' : ok ? 'PASS' : 'FAIL');
const pts = (v: number): string => `${(v * 100).toFixed(1)} points`;

/** Σ cached ÷ Σ prompt over the seconds [fromS, toS) of a run's per-second sums. */
export function windowHit(perSecond: readonly SecondSums[], fromS: number, toS: number): { requests: number; rate: number | null } {
  let c = 0;
  let p = 0;
  let n = 0;
  for (const s of perSecond) {
    if (s.s < fromS || s.s >= toS) continue;
    c += s.cachedTokens;
    p += s.promptTokens;
    n += s.requests;
  }
  return { requests: n, rate: p === 0 ? null : c / p };
}

/** Pooled prediction accuracy over the seconds [fromS, toS) of every replica. */
export function pooledAccuracy(facts: ReplicaFacts, fromS: number, toS: number): { n: number; rate: number | null } {
  let n = 0;
  let ok = 0;
  for (const list of Object.values(facts.accuracyPerSecond)) {
    for (const [s, k, c] of list) {
      if (s < fromS || s >= toS) continue;
      n += k;
      ok += c;
    }
  }
  return { n, rate: n === 0 ? null : ok / n };
}

/** The routers' gauges: 1 while connected to NATS; 1 once the index stream replay caught up. */
export const CONNECTED_SERIES = 'cacheroute_replication_connected';
export const CAUGHT_UP_SERIES = 'cacheroute_replication_replay_caught_up';

/**
 * ms after `backMs` until every replica's `series` read 1 for good (null when no replica
 * exports it, or one never settled).
 */
export function settledMs(facts: ReplicaFacts, series: string, backMs: number): number | null {
  const times: Array<number | null> = [];
  for (const sc of facts.replicationSeries) {
    if (sc.series !== series) continue;
    let settled: number | null = null;
    for (const [t, v] of sc.points) {
      if (v === 1) settled ??= Math.max(t, backMs);
      else settled = null;
    }
    times.push(settled);
  }
  if (times.length === 0 || times.some((t) => t === null)) return null;
  return Math.max(...(times as number[])) - backMs;
}

/**
 * Reconvergence of the replicas' prefix indexes after NATS returned: the first comparison
 * at or after `backMs` whose lowest pairwise key overlap is back within 2 points of its
 * median over the 8 s before NATS stopped (the churn level of healthy sharing). Also the
 * lowest overlap during the outage.
 */
export function indexReconvergence(
  facts: ReplicaFacts,
  stopMs: number,
  backMs: number,
): { ms: number | null; before: number | null; outageMin: number | null } {
  const vals = (from: number, to: number): number[] =>
    facts.indexAgreement.filter((a) => a.tMs >= from && a.tMs < to && a.minJaccard !== null).map((a) => a.minJaccard as number);
  const pre = vals(Math.max(0, stopMs - 8000), stopMs).sort((x, y) => x - y);
  const before = pre.length === 0 ? null : (pre[Math.floor(pre.length / 2)] as number);
  const outage = vals(stopMs, backMs);
  const outageMin = outage.length === 0 ? null : Math.min(...outage);
  if (before === null) return { ms: null, before, outageMin };
  const hit = facts.indexAgreement.find((a) => a.tMs >= backMs && a.minJaccard !== null && a.minJaccard >= before - 0.02);
  return { ms: hit === undefined ? null : hit.tMs - backMs, before, outageMin };
}

/**
 * Seconds after NATS returned until the replicas' pooled predicted-hit accuracy (3 s
 * windows) is back within 5 points of what it was before NATS stopped.
 */
export function accuracyRecoveryS(
  facts: ReplicaFacts,
  stopS: number,
  backS: number,
  lastS: number,
): { s: number | null; before: number | null } {
  const before = pooledAccuracy(facts, 0, stopS).rate;
  if (before === null) return { s: null, before };
  for (let s = backS; s + 3 <= lastS; s++) {
    const w = pooledAccuracy(facts, s, s + 3).rate;
    if (w !== null && w >= before - 0.05) return { s: s - backS, before };
  }
  return { s: null, before };
}

function scaleChecks(rs: readonly ExperimentResult[]): TargetCheck[] {
  const a = find(rs, 'scale', 'replicas-1');
  const b = find(rs, 'scale', 'replicas-3');
  if (!a || !b) return [];
  const ha = a.summary.hits.engineTokenHitRate;
  const hb = b.summary.hits.engineTokenHitRate;
  const r50 = a.summary.ttftMs.p50 && b.summary.ttftMs.p50 !== null ? b.summary.ttftMs.p50 / a.summary.ttftMs.p50 : null;
  const r99 = a.summary.ttftMs.p99 && b.summary.ttftMs.p99 !== null ? b.summary.ttftMs.p99 / a.summary.ttftMs.p99 : null;
  return [
    {
      target: `1 vs 3 replicas: engine token hit within ${REPLICA_BARS.scaleHitPoints * 100} points`,
      status: status(ha !== null && hb !== null, Math.abs((hb ?? 0) - (ha ?? 0)) <= REPLICA_BARS.scaleHitPoints),
      detail: `3 replicas ${fmtPct(hb)} vs 1 replica ${fmtPct(ha)} (${ha !== null && hb !== null ? pts(hb - ha) : NA}); success ${fmtPct(b.summary.success.successRate)} vs ${fmtPct(a.summary.success.successRate)}`,
    },
    {
      target: `1 vs 3 replicas: TTFT p50 and p99 within ${Math.round((REPLICA_BARS.scaleTtftRatio - 1) * 100)}%`,
      status: status(r50 !== null && r99 !== null, (r50 ?? 9) <= REPLICA_BARS.scaleTtftRatio && (r99 ?? 9) <= REPLICA_BARS.scaleTtftRatio),
      detail: `p50 ${fmtMs(b.summary.ttftMs.p50)} vs ${fmtMs(a.summary.ttftMs.p50)} (${fmtRatio(r50)}); p99 ${fmtMs(b.summary.ttftMs.p99)} vs ${fmtMs(a.summary.ttftMs.p99)} (${fmtRatio(r99)})`,
    },
  ];
}

function killChecks(rs: readonly ExperimentResult[]): TargetCheck[] {
  const k = find(rs, 'kill', 'replicas-3-kill-r1');
  const f = k?.replicas;
  if (!k || !f) return [];
  const times = f.faults
    .map(
      (e) =>
        `${e.action} ${e.target ?? ''} at ${fmtMs(e.startedMs)}${e.doneMs !== null ? ` (done ${fmtMs(e.doneMs)})` : ` (${e.error ?? 'not done'})`}`,
    )
    .join(', ');
  const out: TargetCheck[] = [
    {
      target: 'SIGKILL 1 of 3 replicas mid-load, restart 10 s later: 0 failed requests',
      status: status(true, f.failed === 0),
      detail: `${f.failed} of ${k.summary.success.requests} failed (${Object.entries(k.summary.success.outcomes)
        .map(([o, n]) => `${o} ${n}`)
        .join(', ')}); ${times}`,
    },
    {
      target: 'SIGKILL 1 of 3 replicas: 0 cut responses',
      status: status(true, f.cut === 0),
      detail: `${f.cut} responses ended without their final chunk; streaming at the kill: ${f.streamingAtKills.map((s) => `${s.completed}/${s.streaming} completed`).join(', ') || NA}`,
    },
  ];
  const j = f.rejoin;
  const known = j !== undefined && j.after5s.n > 0;
  out.push({
    target: `restarted replica's predicted-hit accuracy ≥ ${REPLICA_BARS.rejoinAccuracy * 100}% within ${REPLICA_BARS.rejoinWithinMs / 1000} s of rejoining`,
    status: status(known, (j?.after5s.rate ?? 0) >= REPLICA_BARS.rejoinAccuracy),
    detail:
      j === undefined
        ? 'no restart completed'
        : j.after5s.n === 0
          ? `no decision attributed to ${j.replica} after its restart (the decision header names no replica: ${Object.keys(f.accuracy.byReplica).join(', ')})`
          : `${j.replica} from ${fmtMs(j.rejoinMs + REPLICA_BARS.rejoinWithinMs)} on: ${fmtPct(j.after5s.rate)} of ${j.after5s.n}; its first 5 s: ${fmtPct(j.first5s.rate)} of ${j.first5s.n}; other replicas, same window: ${fmtPct(j.othersAfter5s.rate)} of ${j.othersAfter5s.n}; first decision ${fmtMs(j.firstDecisionMs === null ? null : j.firstDecisionMs - j.rejoinMs)} after listening`,
  });
  return out;
}

function failOpenChecks(rs: readonly ExperimentResult[]): TargetCheck[] {
  const r = find(rs, 'fail-open', 'replicas-1-fail-open-kill');
  const f = r?.replicas;
  if (!r || !f) return [];
  const s = f.streamingAtKills[0];
  return [
    {
      target: 'single replica SIGKILLed mid-stream, fail-open: responses already streaming complete',
      status: status(s !== undefined && s.streaming > 0, s !== undefined && s.completed === s.streaming),
      detail:
        s === undefined
          ? 'no kill happened'
          : `${s.completed} of ${s.streaming} streaming at the kill (${fmtMs(s.atMs)}) completed; whole run: ${f.failed} failed, ${f.cut} cut of ${r.summary.success.requests} (${
              Object.entries(r.summary.success.failedStatuses)
                .map(([k, v]) => `HTTP ${k} ×${v}`)
                .join(', ') || 'no HTTP errors'
            })`,
    },
  ];
}

function natsChecks(rs: readonly ExperimentResult[]): TargetCheck[] {
  const r = find(rs, 'nats', 'replicas-3-nats-down');
  const f = r?.replicas;
  if (!r || !f) return [];
  const stop = f.faults.find((e) => e.action === 'stop-nats');
  const back = f.faults.find((e) => e.action === 'start-nats');
  const out: TargetCheck[] = [
    {
      target: 'NATS stopped 20 s mid-load: 0 failed requests',
      status: status(true, f.failed === 0),
      detail: `${f.failed} of ${r.summary.success.requests} failed; ${f.cut} cut`,
    },
  ];
  const ref = find(rs, 'scale', 'replicas-3')?.replicas;
  if (stop && back?.doneMs !== null && back !== undefined) {
    const stopS = Math.ceil(stop.startedMs / 1000);
    const backS = Math.floor((back.doneMs as number) / 1000);
    const during = windowHit(f.perSecond, stopS, backS);
    const base = ref ? windowHit(ref.perSecond, stopS, backS) : undefined;
    const d = during.rate !== null && base?.rate !== null && base !== undefined ? (during.rate as number) - (base.rate as number) : null;
    out.push({
      target: `NATS down: token hit within ${REPLICA_BARS.natsHitPoints * 100} points`,
      status: status(d !== null, Math.abs(d ?? 1) <= REPLICA_BARS.natsHitPoints),
      detail: `requests sent ${stopS}–${backS} s: ${fmtPct(during.rate)} (${during.requests} requests) vs the same seconds of scale/replicas-3 with NATS up ${fmtPct(base?.rate)} (${base?.requests ?? 0})${d !== null ? `: ${pts(d)}` : ''}; whole run engine token hit ${fmtPct(r.summary.hits.engineTokenHitRate)}`,
    });
    const backMs = back.doneMs as number;
    const ix = indexReconvergence(f, stop.startedMs, backMs);
    const conn = settledMs(f, CONNECTED_SERIES, backMs);
    const caught = settledMs(f, CAUGHT_UP_SERIES, backMs);
    const lastS = Math.max(0, ...f.perSecond.map((s) => s.s));
    const acc = accuracyRecoveryS(f, Math.floor(stop.startedMs / 1000), Math.ceil(backMs / 1000), lastS + 1);
    const known = ix.before !== null;
    out.push({
      target: `replicas reconverge within ${REPLICA_BARS.reconvergeMs / 1000} s after NATS returns`,
      status: status(known, (ix.ms ?? Number.POSITIVE_INFINITY) <= REPLICA_BARS.reconvergeMs),
      detail: `${known ? `prefix-index key overlap (lowest replica pair) back to ≥ its pre-stop median ${fmtPct(ix.before)} − 2 points ${ix.ms === null ? 'never' : fmtMs(ix.ms)} after NATS was ready (lowest during the outage ${fmtPct(ix.outageMin)})` : 'no index comparisons (no /debug/replication/index)'}; \`${CONNECTED_SERIES}\` 1 on every replica after ${fmtMs(conn)}, \`${CAUGHT_UP_SERIES}\` after ${fmtMs(caught)}; pooled predicted-hit accuracy (3 s windows) back within 5 points of its pre-stop ${fmtPct(acc.before)} ${acc.s === null ? 'never' : `${acc.s} s after`}`,
    });
  }
  return out;
}

/** CPU per request less what the routers burn with no traffic over the same time (ms). */
export function netCpuMsPerRequest(r: ExperimentResult): number | null {
  const f = r.replicas;
  if (!f || f.cpuMsPerRequest === null || f.idleCpuPerS === undefined || f.idleCpuPerS === null || r.workload.requests === 0) return null;
  return f.cpuMsPerRequest - (f.idleCpuPerS * f.cpuWindowS * 1000) / r.workload.requests;
}

function cpuChecks(rs: readonly ExperimentResult[]): TargetCheck[] {
  const cpu = rs.filter((r) => r.block === 'cpu' && r.error === null);
  const side = (prefix: string): number[] =>
    cpu
      .filter((r) => r.contender.label.startsWith(prefix))
      .map((r) => r.replicas?.cpuMsPerRequest ?? null)
      .filter((v): v is number => v !== null);
  const mean = (xs: number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
  const mine = side('this-');
  const main = side('main-');
  const a = mean(mine);
  const b = mean(main);
  const out: TargetCheck[] = [];
  if (cpu.length > 0) {
    const ratio = a !== null && b ? a / b : null;
    const exact = cpu.filter((r) => r.contender.label.startsWith('this-')).every((r) => r.replicas?.inflightExact === true);
    const net = (prefix: string): string =>
      cpu
        .filter((r) => r.contender.label.startsWith(prefix))
        .map((r) => {
          const v = netCpuMsPerRequest(r);
          return v === null ? NA : `${(v * 1000).toFixed(0)} µs`;
        })
        .join(', ');
    const idle = (prefix: string): string =>
      cpu
        .filter((r) => r.contender.label.startsWith(prefix))
        .map((r) => (r.replicas?.idleCpuPerS == null ? NA : `${(r.replicas.idleCpuPerS * 1000).toFixed(0)} ms/s`))
        .join(', ');
    const netSide = (prefix: string): number[] =>
      cpu
        .filter((r) => r.contender.label.startsWith(prefix))
        .map(netCpuMsPerRequest)
        .filter((v): v is number => v !== null);
    const netMine = mean(netSide('this-'));
    const netMain = mean(netSide('main-'));
    const netRatio = netMine !== null && netMain ? netMine / netMain : null;
    out.push({
      target: `router CPU per routed request, realistic path ≤ ${REPLICA_BARS.cpuRatio}× the baseline's (main-*), in-flight accounting exact (status on the gross figure)`,
      status: status(ratio !== null, (ratio ?? 9) <= REPLICA_BARS.cpuRatio && exact),
      detail: `this build ${mine.map((v) => `${(v * 1000).toFixed(0)} µs`).join(', ')} vs main ${main.map((v) => `${(v * 1000).toFixed(0)} µs`).join(', ')} (means ${fmtRatio(ratio)}); idle CPU this ${idle('this-')} vs main ${idle('main-')}, so marginal (gross less the same process's idle rate, measured just before the load, over the run's window): this ${net('this-')} vs main ${net('main-')} (means ${fmtRatio(netRatio)}); in-flight back to 0 on every replica after the runs: ${exact ? 'yes' : 'no'} (${cpu.map((r) => `${r.contender.label} ${r.replicas?.inflightAtEnd.map((v) => `${v.requests}/${v.promptTokens}`).join(' ') ?? NA}`).join('; ')})`,
    });
  }
  const low = rs.filter((r) => r.block === 'low-load' && r.error === null);
  const me = low.find((r) => r.contender.label === 'this-build');
  const peers = low.filter((r) => r.contender.kind === 'sglang-router' || r.contender.kind === 'vllm-router');
  if (me && peers.length > 0) {
    const best = peers.reduce<ExperimentResult | undefined>(
      (x, p) => (p.summary.ttftMs.p50 !== null && (x === undefined || (x.summary.ttftMs.p50 ?? Infinity) > p.summary.ttftMs.p50) ? p : x),
      undefined,
    );
    const ratio =
      best && me.summary.ttftMs.p50 !== null && best.summary.ttftMs.p50 ? me.summary.ttftMs.p50 / best.summary.ttftMs.p50 : null;
    const mainRun = low.find((r) => r.contender.label === 'main-build');
    out.push({
      target: `TTFT p50 through Envoy + cacheroute ≤ ${REPLICA_BARS.lowLoadTtftRatio}× the best peer router's at low load`,
      status: status(ratio !== null, (ratio ?? 9) <= REPLICA_BARS.lowLoadTtftRatio && me.summary.success.successRate === 1),
      detail: `${fmtMs(me.summary.ttftMs.p50)} vs ${best?.contender.label ?? NA} ${fmtMs(best?.summary.ttftMs.p50)} (${fmtRatio(ratio)}); ${peers.map((p) => `${p.contender.label} ${fmtMs(p.summary.ttftMs.p50)}`).join(', ')}${mainRun ? `; main's build ${fmtMs(mainRun.summary.ttftMs.p50)}` : ''}; success ${fmtPct(me.summary.success.successRate)}`,
    });
  }
  return out;
}

export function replicaChecks(results: readonly ExperimentResult[]): TargetCheck[] {
  return [...scaleChecks(results), ...killChecks(results), ...failOpenChecks(results), ...natsChecks(results), ...cpuChecks(results)];
}

/** results.md table: one row per run that has replica facts. */
export function replicaTable(results: readonly ExperimentResult[]): string | null {
  const rs = results.filter((r) => r.replicas !== undefined);
  if (rs.length === 0) return null;
  return mdTable(
    [
      'run',
      'replicas',
      'faults (start → done)',
      'failed',
      'cut',
      'streaming at kill: completed',
      'engine tok hit',
      'TTFT p50 / p99',
      'spread req',
      'router CPU / req (Σ replicas)',
      'predicted-hit accuracy (all / per replica)',
      'in-flight at end (req/tok per replica)',
    ],
    rs.map((r) => {
      const f = r.replicas as ReplicaFacts;
      return [
        r.id,
        String(f.replicas.length),
        f.faults
          .map(
            (e) =>
              `${e.action}${e.target ? ` ${e.target}` : ''} ${fmtNum(e.startedMs / 1000)} → ${e.doneMs === null ? (e.error ?? NA) : `${fmtNum(e.doneMs / 1000)} s`}`,
          )
          .join('; ') || '–',
        String(f.failed),
        String(f.cut),
        f.streamingAtKills.map((s) => `${s.completed}/${s.streaming}`).join(', ') || NA,
        fmtPct(r.summary.hits.engineTokenHitRate),
        `${fmtMs(r.summary.ttftMs.p50)} / ${fmtMs(r.summary.ttftMs.p99)}`,
        fmtRatio(r.summary.spread.requestsMaxOverMean),
        f.cpuMsPerRequest === null ? NA : `${(f.cpuMsPerRequest * 1000).toFixed(0)} µs`,
        f.accuracy.all.n === 0
          ? NA
          : `${fmtPct(f.accuracy.all.rate)} of ${f.accuracy.all.n}; ${Object.entries(f.accuracy.byReplica)
              .map(([k, v]) => `${k} ${fmtPct(v.rate)}`)
              .join(', ')}`,
        f.inflightAtEnd.map((v) => `${v.requests}/${v.promptTokens}`).join(' '),
      ];
    }),
  );
}
