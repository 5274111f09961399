/**
 * A workload is a finite, fully materialised list of requests with their arrival times.
 * Every generator is a pure function of its parameters and a seed, so two contenders
 * in the same run (and two runs with the same seed) see byte-identical request streams.
 */

import type { StreamedRequest } from '../../test/kit/sse-request.js';

export type { ApiKind, ChatMessage } from '../../test/kit/sse-request.js';

/** Waits for another request of the same stream before being sent (multi-turn pacing). */
export interface RequestDependency {
  /** Id of the request that must finish first. */
  readonly afterId: string;
  /** Think time after that request finished, in ms. */
  readonly thinkMs: number;
}

export interface BenchRequest extends StreamedRequest {
  /** Unique and stable within the workload. */
  readonly id: string;
  /** Scheduled arrival, ms after the start of the run (earliest send time for dependent turns). */
  readonly atMs: number;
  /** Prompt tokens by construction (synthetic text has exactly one token per word). */
  readonly promptTokens: number;
  /** Sharing group ('' when the prompt shares nothing by design). */
  readonly group: string;
  /**
   * Leading prompt tokens this request shares with an earlier request of the stream
   * (an infinite cache at block granularity 1 could reuse this many).
   */
  readonly reusableTokens: number;
  readonly dependsOn?: RequestDependency;
  /**
   * Warm-up request: sent in a separate phase before the measured stream and left out of
   * the statistics (like inference-perf's warm-up stage), so short runs are not dominated
   * by compulsory first-time misses.
   */
  readonly warmup?: boolean;
}

export interface Workload {
  /** Scenario name, e.g. `shared-prefix`, `hot-prefix`. */
  readonly name: string;
  readonly requests: readonly BenchRequest[];
  /** Parameters that produced it (goes into results.json / run.json). */
  readonly params: Readonly<Record<string, unknown>>;
}

/** Ideal (infinite-cache) token reuse of the measured requests: sum(reusable) / sum(prompt). */
export function idealReuse(requests: readonly BenchRequest[]): number {
  let reusable = 0;
  let total = 0;
  for (const r of requests) {
    if (r.warmup) continue;
    reusable += r.reusableTokens;
    total += r.promptTokens;
  }
  return total === 0 ? 0 : reusable / total;
}
