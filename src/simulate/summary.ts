/**
 * One run's figures: what a user choosing a routing strategy compares (hit rate, TTFT
 * p50/p99, the busiest engine's share) and what says how the simulator itself did (virtual
 * and wall time, callbacks, decision cost, heap).
 */
import type { RequestRecord } from './types.js';

export interface SimSummary {
  readonly engines: number;
  readonly requests: number;
  readonly ok: number;
  readonly failed: number;
  /** Prompt tokens served from the engines' prefix caches / prompt tokens (measured, ok requests). */
  readonly hitRate: number;
  /** The same over follow-up turns only (requests sent after an earlier one finished; NaN without any). */
  readonly followUpHitRate: number;
  /** Measured follow-up turns. */
  readonly followUps: number;
  readonly ttftP50Ms: number;
  readonly ttftP90Ms: number;
  readonly ttftP99Ms: number;
  readonly ttftMeanMs: number;
  readonly e2eP50Ms: number;
  readonly e2eP99Ms: number;
  /** Requests on the busiest engine / requests (1/engines is perfectly even). */
  readonly busiestShare: number;
  readonly virtualMs: number;
  readonly wallMs: number;
  /** CPU time of the process during the run (user + system; GC threads included), ms. */
  readonly cpuMs: number;
  /** Simulated requests per wall-clock minute. */
  readonly requestsPerWallMinute: number;
  /** Simulated requests per CPU minute (what a quiet core would do; the wall figure on a busy machine is lower). */
  readonly requestsPerCpuMinute: number;
  readonly callbacks: number;
  readonly decisionP50Micros: number;
  readonly decisionP99Micros: number;
  /** V8 heap in use at the end of the run, MiB. */
  readonly heapUsedMiB: number;
}

export interface RunFacts {
  readonly engines: number;
  readonly requests: number;
  readonly virtualMs: number;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly callbacks: number;
  readonly decisionMicros: readonly number[];
}

export function summarize(records: readonly RequestRecord[], facts: RunFacts): SimSummary {
  const ttft: number[] = [];
  const e2e: number[] = [];
  let prompt = 0;
  let cached = 0;
  let followUps = 0;
  let fuPrompt = 0;
  let fuCached = 0;
  let sum = 0;
  const perEngine = new Map<number, number>();
  for (const r of records) {
    if (r.engine >= 0) perEngine.set(r.engine, (perEngine.get(r.engine) ?? 0) + 1);
    if (r.followUp === true) followUps++;
    if (!r.ok) continue;
    if (r.followUp === true) {
      fuPrompt += r.promptTokens;
      fuCached += r.cachedTokens;
    }
    ttft.push(r.ttftMs);
    e2e.push(r.e2eMs);
    sum += r.ttftMs;
    prompt += r.promptTokens;
    cached += r.cachedTokens;
  }
  ttft.sort((a, b) => a - b);
  e2e.sort((a, b) => a - b);
  let busiest = 0;
  for (const n of perEngine.values()) busiest = Math.max(busiest, n);
  const decisions = [...facts.decisionMicros].sort((a, b) => a - b);
  return {
    engines: facts.engines,
    requests: facts.requests,
    ok: ttft.length,
    failed: records.length - ttft.length + Math.max(0, facts.requests - records.length),
    hitRate: prompt === 0 ? 0 : cached / prompt,
    followUpHitRate: fuPrompt === 0 ? Number.NaN : fuCached / fuPrompt,
    followUps,
    ttftP50Ms: quantile(ttft, 0.5),
    ttftP90Ms: quantile(ttft, 0.9),
    ttftP99Ms: quantile(ttft, 0.99),
    ttftMeanMs: ttft.length === 0 ? Number.NaN : sum / ttft.length,
    e2eP50Ms: quantile(e2e, 0.5),
    e2eP99Ms: quantile(e2e, 0.99),
    busiestShare: records.length === 0 ? 0 : busiest / records.length,
    virtualMs: facts.virtualMs,
    wallMs: facts.wallMs,
    cpuMs: facts.cpuMs,
    requestsPerWallMinute: facts.wallMs <= 0 ? 0 : (facts.requests / facts.wallMs) * 60_000,
    requestsPerCpuMinute: facts.cpuMs <= 0 ? 0 : (facts.requests / facts.cpuMs) * 60_000,
    callbacks: facts.callbacks,
    decisionP50Micros: quantile(decisions, 0.5),
    decisionP99Micros: quantile(decisions, 0.99),
    heapUsedMiB: process.memoryUsage().heapUsed / (1024 * 1024),
  };
}

/** Nearest-rank quantile of a sorted array (NaN when empty). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}
