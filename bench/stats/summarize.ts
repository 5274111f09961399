/**
 * Aggregates one run (one scenario × one contender × one rate) into the numbers the
 * report shows. Accounting rules, stated once:
 * - every request of the workload is in `requests`; success = outcome `ok`;
 * - latency percentiles use successful requests only (a failed request has no TTFT), so
 *   they must always be read next to the success rate;
 * - throughput counts successful requests and their output tokens over the wall time
 *   from the first scheduled arrival to the last response;
 * - request-level hit rate: among successful requests that reported `cached_tokens`, the
 *   share with cached_tokens > 0; cached fraction: sum(cached) / sum(prompt) over them;
 * - token-level hit rate: engines' own prefix-cache hits / queries deltas.
 */
import type { RequestRecord } from '../harness/driver.js';
import type { EngineCounters } from './engine-counters.js';
import { loadSpread, type EngineLoad, type LoadSpread } from './load-spread.js';
import { distribution, type Distribution } from '../../test/kit/percentiles.js';

export interface SuccessAccounting {
  readonly requests: number;
  readonly ok: number;
  readonly failed: number;
  readonly successRate: number | null;
  /** Count per outcome (ok, http-error, timeout, ...). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Count per HTTP status of non-ok responses that had one (e.g. 429, 503). */
  readonly failedStatuses: Readonly<Record<string, number>>;
}

export interface HitRates {
  /** Successful requests that reported cached_tokens. */
  readonly reporting: number;
  readonly requestHitRate: number | null;
  /** Share of those requests that had anything reusable at all (ceiling of requestHitRate). */
  readonly requestHitCeiling: number | null;
  readonly cachedFraction: number | null;
  /** Same as cachedFraction but relative to what an infinite cache could reuse (workload ceiling). */
  readonly cachedOfReusable: number | null;
  readonly engineTokenHitRate: number | null;
}

export interface RunSummary {
  readonly success: SuccessAccounting;
  readonly ttftMs: Distribution;
  /** TTFT of successful requests the engine reported no cached tokens for (cold prefills). */
  readonly ttftColdMs: Distribution;
  /** TTFT of successful requests with cached_tokens > 0 (prefix hits). */
  readonly ttftHitMs: Distribution;
  readonly e2eMs: Distribution;
  readonly wallS: number;
  readonly reqPerS: number;
  readonly outTokPerS: number;
  readonly hits: HitRates;
  /** Ideal token reuse of the workload with an infinite cache (ceiling for hit rates). */
  readonly idealReuse: number;
  readonly spread: LoadSpread & { readonly source: 'engine-metrics' | 'responses' };
  readonly preemptions: number | null;
  readonly maxClientLagMs: number;
}

export function successAccounting(records: readonly RequestRecord[]): SuccessAccounting {
  const outcomes: Record<string, number> = {};
  const failedStatuses: Record<string, number> = {};
  let ok = 0;
  for (const r of records) {
    outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    if (r.outcome === 'ok') ok++;
    else if (r.status > 0) failedStatuses[String(r.status)] = (failedStatuses[String(r.status)] ?? 0) + 1;
  }
  return {
    requests: records.length,
    ok,
    failed: records.length - ok,
    successRate: records.length === 0 ? null : ok / records.length,
    outcomes,
    failedStatuses,
  };
}

export function hitRates(records: readonly RequestRecord[], engineDeltas?: ReadonlyMap<string, EngineCounters>): HitRates {
  let reporting = 0;
  let hit = 0;
  let cached = 0;
  let prompt = 0;
  let reusable = 0;
  let couldHit = 0;
  for (const r of records) {
    if (r.outcome !== 'ok' || r.cachedTokens === null) continue;
    reporting++;
    if (r.cachedTokens > 0) hit++;
    if (r.reusableTokens > 0) couldHit++;
    cached += r.cachedTokens;
    prompt += r.promptTokens ?? r.expectedPromptTokens;
    reusable += r.reusableTokens;
  }
  let hits = 0;
  let queries = 0;
  for (const d of engineDeltas?.values() ?? []) {
    hits += d.prefixHitTokens;
    queries += d.prefixQueryTokens;
  }
  return {
    reporting,
    requestHitRate: reporting === 0 ? null : hit / reporting,
    requestHitCeiling: reporting === 0 ? null : couldHit / reporting,
    cachedFraction: prompt === 0 ? null : cached / prompt,
    cachedOfReusable: reusable === 0 ? null : Math.min(1, cached / reusable),
    engineTokenHitRate: queries === 0 ? null : hits / queries,
  };
}

export interface SummarizeInput {
  readonly records: readonly RequestRecord[];
  readonly wallMs: number;
  readonly maxLagMs: number;
  readonly engineIds: readonly string[];
  /** Per-engine counter deltas over the run, keyed by engine id (absent if not scraped). */
  readonly engineDeltas?: ReadonlyMap<string, EngineCounters>;
  readonly idealReuse: number;
}

export function summarizeRun(input: SummarizeInput): RunSummary {
  const { records } = input;
  const ok = records.filter((r) => r.outcome === 'ok');
  const wallS = input.wallMs / 1000;
  let outTokens = 0;
  for (const r of ok) outTokens += r.outputTokens;
  const fromMetrics = input.engineDeltas !== undefined && input.engineIds.every((id) => input.engineDeltas?.has(id));
  const loads = new Map<string, EngineLoad>();
  if (fromMetrics) {
    for (const id of input.engineIds) {
      const d = input.engineDeltas?.get(id) as EngineCounters;
      loads.set(id, { requests: d.requests, promptTokens: d.promptTokens });
    }
  } else {
    for (const r of records) {
      if (r.engine === null) continue;
      const l = loads.get(r.engine) ?? { requests: 0, promptTokens: 0 };
      loads.set(r.engine, { requests: l.requests + 1, promptTokens: l.promptTokens + (r.promptTokens ?? r.expectedPromptTokens) });
    }
  }
  let preemptions: number | null = null;
  if (input.engineDeltas !== undefined) {
    preemptions = 0;
    for (const d of input.engineDeltas.values()) preemptions += d.preemptions;
  }
  return {
    success: successAccounting(records),
    ttftMs: distribution(ok.map((r) => r.ttftMs as number)),
    ttftColdMs: distribution(ok.filter((r) => r.cachedTokens === 0).map((r) => r.ttftMs as number)),
    ttftHitMs: distribution(ok.filter((r) => r.cachedTokens !== null && r.cachedTokens > 0).map((r) => r.ttftMs as number)),
    e2eMs: distribution(ok.map((r) => r.e2eMs as number)),
    wallS,
    reqPerS: wallS > 0 ? ok.length / wallS : 0,
    outTokPerS: wallS > 0 ? outTokens / wallS : 0,
    hits: hitRates(records, input.engineDeltas),
    idealReuse: input.idealReuse,
    spread: { ...loadSpread(input.engineIds, loads), source: fromMetrics ? 'engine-metrics' : 'responses' },
    preemptions,
    maxClientLagMs: input.maxLagMs,
  };
}
