/**
 * What a run with router replicas and faults shows, from the request records (engine-
 * reported cached tokens, the router's decision header), the fault timeline and the
 * replica samples. Pure functions, so the rules are unit-tested:
 *
 * - failed: every request whose outcome is not `ok` (not-sent included);
 * - cut: a response that started (status 2xx: the stream was open) and did not end with
 *   its final chunk / [DONE];
 * - streaming at a kill: responses whose first text came before the kill and whose end
 *   came after it; all of them must complete;
 * - predicted hit vs real hit: the decision header's `match=m/t` (share of the prompt's
 *   blocks the deciding replica believed the chosen engine holds) against the engine's
 *   cached_tokens / prompt_tokens. Tolerance = one router block + one engine block of the
 *   prompt. A predicted miss (≤ tolerance) is correct when the engine had nothing beyond
 *   the tolerance; a predicted hit is correct when the engine cached at least the predicted
 *   share less the tolerance. Requests served by another engine than the one decided
 *   (Envoy retry / fallback) are left out;
 * - windowed token hit rate: Σ cached / Σ prompt over successful requests sent in a window.
 */
import type { RequestRecord } from '../harness/driver.js';
import type { FaultEvent } from '../harness/fault-script.js';
import type { ReplicaSample } from '../harness/replica-sampler.js';
import { parseDecisionSummary } from '../../src/extproc/decision-header.js';

/** Simulator / vLLM KV block, tokens (one engine block of tolerance). */
export const ENGINE_BLOCK_TOKENS = 16;

export interface ParsedDecision {
  readonly endpoint: string | null;
  readonly replica: string | null;
  readonly matched: number;
  readonly total: number;
}

export function parseDecision(header: string | null): ParsedDecision | null {
  if (header === null || header === '') return null;
  const d = parseDecisionSummary(header);
  const m = /^(\d+)\/(\d+)$/.exec(d['match'] ?? '');
  if (!m) return null;
  return { endpoint: d['ep'] ?? null, replica: d['replica'] ?? null, matched: Number(m[1]), total: Number(m[2]) };
}

/** When the request went out, ms from run start. */
export function sentMs(r: RequestRecord): number {
  return r.scheduledMs + r.lagMs;
}

export function isCut(r: RequestRecord): boolean {
  return r.status >= 200 && r.status < 300 && r.outcome !== 'ok';
}

export interface Prediction {
  readonly id: string;
  readonly replica: string | null;
  readonly sentMs: number;
  readonly predicted: number;
  readonly actual: number;
  readonly correct: boolean;
}

/** The prediction check of one successful request (null when it cannot be judged). */
export function judgePrediction(r: RequestRecord): Prediction | null {
  if (r.outcome !== 'ok' || r.cachedTokens === null) return null;
  const d = parseDecision(r.decision);
  if (d === null || d.total === 0) return null;
  if (d.endpoint !== null && r.engine !== null && d.endpoint !== r.engine) return null;
  const prompt = r.promptTokens ?? r.expectedPromptTokens;
  if (prompt <= 0) return null;
  const predicted = d.matched / d.total;
  const actual = Math.min(1, r.cachedTokens / prompt);
  const tol = 1 / d.total + ENGINE_BLOCK_TOKENS / prompt;
  const correct = predicted <= tol ? actual <= tol : actual >= predicted - tol;
  return { id: r.id, replica: d.replica, sentMs: sentMs(r), predicted, actual, correct };
}

export interface Accuracy {
  readonly n: number;
  readonly correct: number;
  readonly rate: number | null;
}

export function accuracyOf(ps: readonly Prediction[]): Accuracy {
  const correct = ps.filter((p) => p.correct).length;
  return { n: ps.length, correct, rate: ps.length === 0 ? null : correct / ps.length };
}

export function predictions(records: readonly RequestRecord[]): Prediction[] {
  const out: Prediction[] = [];
  for (const r of records) {
    const p = judgePrediction(r);
    if (p) out.push(p);
  }
  return out;
}

export function inWindow<T extends { sentMs: number }>(xs: readonly T[], fromMs: number, toMs: number): T[] {
  return xs.filter((x) => x.sentMs >= fromMs && x.sentMs < toMs);
}

export interface Bucket extends Accuracy {
  /** Seconds from the reference time. */
  readonly fromS: number;
}

/** Accuracy in consecutive buckets from `fromMs` (bucket `bucketMs`, `count` buckets). */
export function accuracyBuckets(ps: readonly Prediction[], fromMs: number, bucketMs: number, count: number): Bucket[] {
  const out: Bucket[] = [];
  for (let i = 0; i < count; i++) {
    const lo = fromMs + i * bucketMs;
    out.push({ fromS: (i * bucketMs) / 1000, ...accuracyOf(inWindow(ps, lo, lo + bucketMs)) });
  }
  return out;
}

export function windowTokenHit(records: readonly RequestRecord[], fromMs: number, toMs: number): { requests: number; rate: number | null } {
  let cached = 0;
  let prompt = 0;
  let n = 0;
  for (const r of records) {
    const t = sentMs(r);
    if (r.outcome !== 'ok' || r.cachedTokens === null || t < fromMs || t >= toMs) continue;
    n++;
    cached += r.cachedTokens;
    prompt += r.promptTokens ?? r.expectedPromptTokens;
  }
  return { requests: n, rate: prompt === 0 ? null : cached / prompt };
}

export interface StreamingAtKill {
  readonly target: string | null;
  readonly atMs: number;
  /** Responses already streaming when the kill landed. */
  readonly streaming: number;
  readonly completed: number;
}

export function streamingAt(records: readonly RequestRecord[], atMs: number, target: string | null): StreamingAtKill {
  let streaming = 0;
  let completed = 0;
  for (const r of records) {
    if (r.ttftMs === null || r.endMs === null) continue;
    const firstText = r.scheduledMs + r.ttftMs;
    if (firstText <= atMs && r.endMs > atMs) {
      streaming++;
      if (r.outcome === 'ok') completed++;
    }
  }
  return { target, atMs, streaming, completed };
}

/**
 * Per replica, the first sample time at or after `fromMs` from which the given series
 * (e.g. a "NATS connected" gauge) reads `value` in every later sample of that replica;
 * null when it never settles. Series are matched by name prefix (labels ignored).
 */
export function settledAt(samples: readonly ReplicaSample[], series: string, value: number, fromMs: number): Map<number, number | null> {
  const byReplica = new Map<number, ReplicaSample[]>();
  for (const s of samples) if (s.tMs >= fromMs) byReplica.set(s.replica, [...(byReplica.get(s.replica) ?? []), s]);
  const out = new Map<number, number | null>();
  for (const [replica, list] of byReplica) {
    let settled: number | null = null;
    for (const s of list) {
      const v = Object.entries(s.metrics).find(([k]) => k === series || k.startsWith(`${series}{`))?.[1];
      if (v === value) settled ??= s.tMs;
      else settled = null;
    }
    out.set(replica, settled);
  }
  return out;
}

/** Sum over replicas of process CPU between two scrapes each (ms per request); null if any replica is missing. */
export function cpuMsPerRequest(
  before: readonly (number | null)[],
  after: readonly (number | null)[],
  requests: number,
): { total: number | null; byReplica: (number | null)[] } {
  const byReplica = before.map((b, i) => {
    const a = after[i] ?? null;
    return b === null || a === null || a < b || requests === 0 ? null : ((a - b) * 1e3) / requests;
  });
  const total = byReplica.some((v) => v === null) ? null : byReplica.reduce<number>((s, v) => s + (v as number), 0);
  return { total, byReplica };
}

export interface InflightAtEnd {
  readonly replica: string;
  readonly requests: number;
  readonly promptTokens: number;
}

/** Every replica's in-flight view once the engines are idle again (exact accounting = all 0). */
export function inflightAtEnd(samples: readonly (ReplicaSample | undefined)[], names: readonly string[]): InflightAtEnd[] {
  return names.map((name, i) => {
    const s = samples[i];
    let requests = Number.NaN;
    let promptTokens = Number.NaN;
    if (s?.endpoints) {
      requests = 0;
      promptTokens = 0;
      for (const v of Object.values(s.endpoints)) {
        requests += v.inflightRequests;
        promptTokens += v.inflightPromptTokens;
      }
    }
    return { replica: name, requests, promptTokens };
  });
}

export function faultTime(events: readonly FaultEvent[], action: FaultEvent['action']): FaultEvent | undefined {
  return events.find((e) => e.action === action);
}
