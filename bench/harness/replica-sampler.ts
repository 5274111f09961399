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
import { parsePrometheusText } from '../../test/kit/prometheus-text.js';
import { httpText } from './engines.js';
import { sleep } from '../../test/kit/managed-process.js';

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
export async function sampleReplica(
  set: ReplicaSet,
  i: number,
  tMs: number,
  timeoutMs = 1000,
  withEndpoints = true,
): Promise<ReplicaSample | undefined> {
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

/** How alike the running replicas' prefix indexes are at one moment. */
export interface IndexAgreement {
  readonly tMs: number;
  /** Replicas that answered. */
  readonly replicas: number;
  /** Every endpoint's digest (block count and XOR of keys) equal on every replica. */
  readonly digestsEqual: boolean;
  /** Lowest, over replica pairs, of the mean over endpoints of |A ∩ B| ÷ |A ∪ B| of their block keys. */
  readonly minJaccard: number | null;
}

/** |A ∩ B| ÷ |A ∪ B| (1 for two empty sets). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let both = 0;
  for (const k of a) if (b.has(k)) both++;
  return both / (a.size + b.size - both);
}

/** Lowest pairwise mean-over-endpoints Jaccard of per-replica key sets (endpoint → keys). */
export function minPairJaccard(views: ReadonlyArray<ReadonlyMap<string, ReadonlySet<string>>>): number | null {
  let min: number | null = null;
  for (let i = 0; i < views.length; i++) {
    for (let j = i + 1; j < views.length; j++) {
      const a = views[i] as ReadonlyMap<string, ReadonlySet<string>>;
      const b = views[j] as ReadonlyMap<string, ReadonlySet<string>>;
      const ids = new Set([...a.keys(), ...b.keys()]);
      let sum = 0;
      for (const id of ids) sum += jaccard(a.get(id) ?? new Set(), b.get(id) ?? new Set());
      const v = ids.size === 0 ? 1 : sum / ids.size;
      min = min === null ? v : Math.min(min, v);
    }
  }
  return min;
}

interface DigestBody {
  endpoints?: Array<{ endpointId?: string; blocks?: number; xor?: string }>;
}

/** One replica's index: endpoint → block keys (from /debug/replication/index), or undefined. */
async function indexKeys(base: string): Promise<{ digest: string; keys: Map<string, Set<string>> } | undefined> {
  const d = await httpText(`${base}/debug/replication/index`, 'GET', 1000).catch(() => undefined);
  if (d === undefined || d.status !== 200) return undefined;
  const eps = ((JSON.parse(d.text) as DigestBody).endpoints ?? []).filter((e) => typeof e.endpointId === 'string');
  const keys = new Map<string, Set<string>>();
  for (const e of eps) {
    const k = await httpText(`${base}/debug/replication/index?endpoint=${encodeURIComponent(e.endpointId as string)}`, 'GET', 2000).catch(
      () => undefined,
    );
    if (k === undefined || k.status !== 200) return undefined;
    keys.set(e.endpointId as string, new Set((JSON.parse(k.text) as { keys?: string[] }).keys ?? []));
  }
  return { digest: eps.map((e) => `${e.endpointId}:${e.blocks}:${e.xor}`).join(','), keys };
}

export interface ReplicaSampler {
  /** Stops polling; resolves with every sample taken. */
  stop(): Promise<{ samples: ReplicaSample[]; agreement: IndexAgreement[] }>;
}

/**
 * Polls every `intervalMs`; with `indexEveryMs` > 0 also compares the running replicas'
 * prefix indexes (the replication debug route) that often.
 */
export function startReplicaSampler(set: ReplicaSet, t0: number, intervalMs = 500, indexEveryMs = 0): ReplicaSampler {
  const samples: ReplicaSample[] = [];
  const agreement: IndexAgreement[] = [];
  const abort = new AbortController();
  let nextIndexAt = 0;
  const loop = (async () => {
    while (!abort.signal.aborted) {
      const tMs = performance.now() - t0;
      const got = await Promise.all(
        set.names.map((_, i) => (set.isRunning(i) ? sampleReplica(set, i, tMs, 1000, false) : Promise.resolve(undefined))),
      );
      for (const s of got) if (s !== undefined) samples.push(s);
      if (indexEveryMs > 0 && tMs >= nextIndexAt) {
        nextIndexAt = tMs + indexEveryMs;
        const views = (
          await Promise.all(set.names.map((_, i) => (set.isRunning(i) ? indexKeys(set.adminUrl(i)) : Promise.resolve(undefined))))
        ).filter((v) => v !== undefined);
        if (views.length >= 2) {
          agreement.push({
            tMs,
            replicas: views.length,
            digestsEqual: views.every((v) => v.digest === views[0]?.digest),
            minJaccard: minPairJaccard(views.map((v) => v.keys)),
          });
        }
      }
      await sleep(Math.max(0, intervalMs - (performance.now() - t0 - tMs)), abort.signal).catch(() => undefined);
    }
  })();
  return {
    stop: async () => {
      abort.abort();
      await loop;
      return { samples, agreement };
    },
  };
}
