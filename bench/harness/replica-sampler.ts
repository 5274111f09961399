/**
 * Reads the replicas of a cacheroute contender: their Prometheus text (process CPU and
 * every replication/NATS series, whatever their names) and, for the end-of-run check, the
 * /debug/endpoints view (in-flight requests and prompt tokens per engine). During a run
 * with faults the sampler polls the metrics of every running replica at an interval
 * (bounded: one poll per interval, short timeouts, stopped by stop()); the series show
 * when a replica lost and regained NATS. Each scrape costs the router a few ms of CPU, so
 * runs without faults are not polled.
 */
import type { ReplicaSet } from '../contenders/types.js';
import { parsePrometheusText } from '../stats/prometheus-text.js';
import { httpText } from './engines.js';
import { sleep } from './managed-process.js';

export interface EndpointLoadView {
  readonly inflightRequests: number;
  readonly inflightPromptTokens: number;
}

export interface ReplicaSample {
  /** ms from the load driver's start. */
  readonly tMs: number;
  readonly replica: number;
  /** Series name with labels (`name{k="v"}`) → value; CPU and replication/NATS series only. */
  readonly metrics: Readonly<Record<string, number>>;
  /** Endpoint id → the replica's in-flight view (absent when /debug/endpoints failed). */
  readonly endpoints?: Readonly<Record<string, EndpointLoadView>>;
}

/** Which series the sampler keeps. */
export function keptSeries(name: string): boolean {
  return name === 'cacheroute_process_cpu_seconds_total' || /replica|replication|nats|jetstream/.test(name);
}

export function seriesKey(name: string, labels: Readonly<Record<string, string>>): string {
  const l = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  return l.length === 0 ? name : `${name}{${l.map(([k, v]) => `${k}="${v}"`).join(',')}}`;
}

/** Parses a /metrics body into the kept series. */
export function keptMetrics(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of parsePrometheusText(text)) if (keptSeries(s.name)) out[seriesKey(s.name, s.labels)] = s.value;
  return out;
}

interface EndpointsBody {
  endpoints?: Array<{ id?: string; load?: { inflightRequests?: number; inflightPromptTokens?: number } }>;
}

export function endpointLoads(body: string): Record<string, EndpointLoadView> {
  const out: Record<string, EndpointLoadView> = {};
  for (const e of (JSON.parse(body) as EndpointsBody).endpoints ?? []) {
    if (typeof e.id !== 'string' || e.load === undefined) continue;
    out[e.id] = { inflightRequests: e.load.inflightRequests ?? 0, inflightPromptTokens: e.load.inflightPromptTokens ?? 0 };
  }
  return out;
}

/** One scrape of replica i (metrics, and the endpoint view if asked); undefined when it does not answer. */
export async function sampleReplica(set: ReplicaSet, i: number, tMs: number, timeoutMs = 1000, withEndpoints = true): Promise<ReplicaSample | undefined> {
  const base = set.adminUrl(i);
  const [m, e] = await Promise.all([
    httpText(`${base}/metrics`, 'GET', timeoutMs).catch(() => undefined),
    withEndpoints ? httpText(`${base}/debug/endpoints`, 'GET', timeoutMs).catch(() => undefined) : Promise.resolve(undefined),
  ]);
  if (m === undefined || m.status !== 200) return undefined;
  let endpoints: Record<string, EndpointLoadView> | undefined;
  try {
    if (e !== undefined && e.status === 200) endpoints = endpointLoads(e.text);
  } catch {
    endpoints = undefined;
  }
  return { tMs, replica: i, metrics: keptMetrics(m.text), ...(endpoints ? { endpoints } : {}) };
}

export interface ReplicaSampler {
  /** Stops polling; resolves with every sample taken. */
  stop(): Promise<ReplicaSample[]>;
}

export function startReplicaSampler(set: ReplicaSet, t0: number, intervalMs = 500): ReplicaSampler {
  const samples: ReplicaSample[] = [];
  const abort = new AbortController();
  const loop = (async () => {
    while (!abort.signal.aborted) {
      const tMs = performance.now() - t0;
      const got = await Promise.all(set.names.map((_, i) => (set.isRunning(i) ? sampleReplica(set, i, tMs, 1000, false) : Promise.resolve(undefined))));
      for (const s of got) if (s !== undefined) samples.push(s);
      await sleep(Math.max(0, intervalMs - (performance.now() - t0 - tMs)), abort.signal).catch(() => undefined);
    }
  })();
  return {
    stop: async () => {
      abort.abort();
      await loop;
      return samples;
    },
  };
}
