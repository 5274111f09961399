/**
 * The replica side of one measured run: per-replica CPU scrapes around the run, the fault
 * script and the replica sampler during it, the in-flight check after it, and the facts
 * (bench/stats/replica-facts.ts) that go into the run's result. Per-second series (token
 * hits, prediction checks per replica) are kept so that bars can compare any window of one
 * run with the same window of another.
 */
import type { ReplicaSet } from '../contenders/types.js';
import type { FaultStep } from '../presets/types.js';
import {
  accuracyBuckets,
  accuracyOf,
  cpuMsPerRequest,
  inflightAtEnd,
  inWindow,
  isCut,
  predictions,
  sentMs,
  streamingAt,
  type Accuracy,
  type Bucket,
  type InflightAtEnd,
  type StreamingAtKill,
} from '../stats/replica-facts.js';
import type { RequestRecord } from './driver.js';
import { runFaultScript, type FaultEvent, type FaultScript } from './fault-script.js';
import { sleep } from '../../test/kit/managed-process.js';
import { sampleReplica, startReplicaSampler, type IndexAgreement, type ReplicaSample, type ReplicaSampler } from './replica-sampler.js';

const CPU = 'cacheroute_process_cpu_seconds_total';

export interface SecondSums {
  /** Second index from run start. */
  readonly s: number;
  readonly requests: number;
  readonly cachedTokens: number;
  readonly promptTokens: number;
}

/** A replica's series value changes (first value, then every change), for the record. */
export interface SeriesChanges {
  readonly replica: string;
  readonly series: string;
  readonly points: ReadonlyArray<readonly [tMs: number, value: number]>;
}

export interface ReplicaFacts {
  readonly replicas: readonly string[];
  readonly faults: readonly FaultEvent[];
  readonly failed: number;
  readonly cut: number;
  /** Σ over replicas of router process CPU during the run ÷ requests of the run. */
  readonly cpuMsPerRequest: number | null;
  /** Σ over replicas of CPU seconds per second before the run, with no traffic (when measured). */
  readonly idleCpuPerS?: number | null;
  /** Run wall time between the two CPU scrapes, s. */
  readonly cpuWindowS: number;
  readonly cpuMsPerRequestByReplica: readonly (number | null)[];
  readonly streamingAtKills: readonly StreamingAtKill[];
  readonly accuracy: { readonly all: Accuracy; readonly byReplica: Readonly<Record<string, Accuracy>>; readonly unjudged: number };
  /** Restarted replica: accuracy of its own decisions after it listened again. */
  readonly rejoin?: {
    readonly replica: string;
    readonly rejoinMs: number;
    readonly firstDecisionMs: number | null;
    readonly first5s: Accuracy;
    readonly after5s: Accuracy;
    /** The other replicas over the same later window (what steady state looks like). */
    readonly othersAfter5s: Accuracy;
    readonly buckets: readonly Bucket[];
  };
  readonly perSecond: readonly SecondSums[];
  /** Prediction checks per replica and second: replica → [second, n, correct][]. */
  readonly accuracyPerSecond: Readonly<Record<string, ReadonlyArray<readonly [number, number, number]>>>;
  readonly replicationSeries: readonly SeriesChanges[];
  /** Runs with NATS and faults: how alike the replicas' prefix indexes were, about once a second. */
  readonly indexAgreement: readonly IndexAgreement[];
  readonly inflightAtEnd: readonly InflightAtEnd[];
  readonly inflightExact: boolean;
  readonly samples: number;
}

async function scrapeCpu(set: ReplicaSet): Promise<(number | null)[]> {
  const got = await Promise.all(
    set.names.map((_, i) => (set.isRunning(i) ? sampleReplica(set, i, 0, 3000, false) : Promise.resolve(undefined))),
  );
  return got.map((s) => s?.metrics[CPU] ?? null);
}

/** Σ over replicas of CPU per second with no traffic, over `ms` (one scrape at each end). */
async function idleCpuPerS(set: ReplicaSet, ms: number): Promise<number | null> {
  const a = await scrapeCpu(set);
  await sleep(ms);
  const b = await scrapeCpu(set);
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x === null || x === undefined || y === null || y === undefined) return null;
    sum += y - x;
  }
  return sum / (ms / 1000);
}

export function perSecondSums(records: readonly RequestRecord[]): SecondSums[] {
  const m = new Map<number, { requests: number; cachedTokens: number; promptTokens: number }>();
  for (const r of records) {
    if (r.outcome !== 'ok' || r.cachedTokens === null) continue;
    const s = Math.floor(sentMs(r) / 1000);
    const cur = m.get(s) ?? { requests: 0, cachedTokens: 0, promptTokens: 0 };
    cur.requests++;
    cur.cachedTokens += r.cachedTokens;
    cur.promptTokens += r.promptTokens ?? r.expectedPromptTokens;
    m.set(s, cur);
  }
  return [...m.entries()].sort(([a], [b]) => a - b).map(([s, v]) => ({ s, ...v }));
}

export function seriesChanges(samples: readonly ReplicaSample[], names: readonly string[]): SeriesChanges[] {
  const out = new Map<string, { replica: string; series: string; points: Array<[number, number]> }>();
  for (const s of samples) {
    for (const [series, value] of Object.entries(s.metrics)) {
      if (series === CPU) continue;
      const replica = names[s.replica] ?? String(s.replica);
      const key = `${replica}\u0000${series}`;
      const cur = out.get(key) ?? { replica, series, points: [] };
      const last = cur.points[cur.points.length - 1];
      if (last === undefined || last[1] !== value) cur.points.push([Math.round(s.tMs), value]);
      out.set(key, cur);
    }
  }
  return [...out.values()];
}

export interface ReplicaRun {
  /** Call right before the load starts (its time is the records' zero). */
  begin(t0: number): void;
  /** After the load ended and the engines drained: settles, scrapes, summarizes. */
  finish(records: readonly RequestRecord[], requests: number): Promise<{ facts: ReplicaFacts; samples: ReplicaSample[] }>;
  /** Stops timers without summarizing (error path). */
  abort(): Promise<void>;
}

export async function prepareReplicaRun(
  set: ReplicaSet,
  faults: readonly FaultStep[],
  log: (m: string) => void,
  idleCpuMs = 0,
): Promise<ReplicaRun> {
  const idle = idleCpuMs > 0 ? await idleCpuPerS(set, idleCpuMs) : undefined;
  const cpuBefore = await scrapeCpu(set);
  const cpuAt = performance.now();
  let script: FaultScript | undefined;
  let sampler: ReplicaSampler | undefined;
  return {
    begin: (t0) => {
      if (faults.length > 0) {
        script = runFaultScript(faults, set, t0, log);
        sampler = startReplicaSampler(set, t0, 500, set.hasNats ? 1000 : 0);
      }
    },
    abort: async () => {
      script?.cancel();
      await script?.done;
      await sampler?.stop();
    },
    finish: async (records, requests) => {
      // Steps planned after the load ended never run; the ones under way finish.
      script?.cancel();
      const events = (await script?.done) ?? [];
      // In-flight views settle within a sharing interval once the engines are idle.
      await sleep(1500);
      const end = await Promise.all(
        set.names.map((_, i) => (set.isRunning(i) ? sampleReplica(set, i, 0, 3000) : Promise.resolve(undefined))),
      );
      const { samples, agreement } = (await sampler?.stop()) ?? { samples: [], agreement: [] };
      const cpuAfter = end.map((s) => s?.metrics[CPU] ?? null);
      const cpuWindowS = (performance.now() - cpuAt) / 1000;
      const restarted = new Set(events.filter((e) => e.action === 'restart-replica').map((e) => e.replica));
      // A restarted replica's counter starts again at 0: its CPU before the kill is lost, so the
      // sum is only reported for runs where every replica lived through.
      const cpu = cpuMsPerRequest(
        cpuBefore.map((v, i) => (restarted.has(i) ? null : v)),
        cpuAfter,
        requests,
      );
      const ps = predictions(records);
      const byReplica: Record<string, Accuracy> = {};
      for (const name of new Set(ps.map((p) => p.replica ?? '(unnamed)')))
        byReplica[name] = accuracyOf(ps.filter((p) => (p.replica ?? '(unnamed)') === name));
      const accuracyPerSecond: Record<string, Array<[number, number, number]>> = {};
      for (const p of ps) {
        const list = (accuracyPerSecond[p.replica ?? '(unnamed)'] ??= []);
        const s = Math.floor(p.sentMs / 1000);
        const last = list[list.length - 1];
        if (last !== undefined && last[0] === s) {
          last[1]++;
          if (p.correct) last[2]++;
        } else {
          list.push([s, 1, p.correct ? 1 : 0]);
        }
      }
      for (const list of Object.values(accuracyPerSecond)) list.sort((a, b) => a[0] - b[0]);
      const okCount = records.filter((r) => r.outcome === 'ok').length;
      let rejoin: ReplicaFacts['rejoin'];
      const restart = events.find((e) => e.action === 'restart-replica' && e.doneMs !== null);
      if (restart && restart.target !== null && restart.doneMs !== null) {
        const mine = ps.filter((p) => p.replica === restart.target && p.sentMs >= (restart.doneMs as number));
        const others = ps.filter((p) => p.replica !== null && p.replica !== restart.target);
        const t = restart.doneMs;
        rejoin = {
          replica: restart.target,
          rejoinMs: t,
          firstDecisionMs: mine.length === 0 ? null : Math.min(...mine.map((p) => p.sentMs)),
          first5s: accuracyOf(inWindow(mine, t, t + 5000)),
          after5s: accuracyOf(inWindow(mine, t + 5000, Number.POSITIVE_INFINITY)),
          othersAfter5s: accuracyOf(inWindow(others, t + 5000, Number.POSITIVE_INFINITY)),
          buckets: accuracyBuckets(mine, t, 1000, 15),
        };
      }
      const inflight = inflightAtEnd(end, set.names);
      return {
        samples,
        facts: {
          replicas: set.names,
          faults: events,
          failed: records.length - okCount,
          cut: records.filter(isCut).length,
          cpuMsPerRequest: cpu.total,
          cpuMsPerRequestByReplica: cpu.byReplica,
          ...(idle !== undefined ? { idleCpuPerS: idle } : {}),
          cpuWindowS,
          streamingAtKills: events.filter((e) => e.action === 'kill-replica').map((e) => streamingAt(records, e.startedMs, e.target)),
          accuracy: { all: accuracyOf(ps), byReplica, unjudged: okCount - ps.length },
          ...(rejoin ? { rejoin } : {}),
          perSecond: perSecondSums(records),
          accuracyPerSecond,
          replicationSeries: seriesChanges(samples, set.names),
          indexAgreement: agreement.map((a) => ({
            ...a,
            tMs: Math.round(a.tMs),
            minJaccard: a.minJaccard === null ? null : Math.round(a.minJaccard * 1e4) / 1e4,
          })),
          inflightAtEnd: inflight,
          inflightExact: inflight.every((v) => v.requests === 0 && v.promptTokens === 0),
          samples: samples.length,
        },
      };
    },
  };
}
