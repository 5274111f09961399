/**
 * Engine-side counters (vLLM metric names) and their deltas over a run. The engines' own
 * counters are the ground truth for token-level prefix-cache hit rate (what vLLM calls
 * hits/queries) and for how much work each engine received, whoever routed it.
 */
import { sumMetric, type Sample } from '../../test/kit/prometheus-text.js';

export interface EngineCounters {
  readonly prefixHitTokens: number;
  readonly prefixQueryTokens: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  readonly requests: number;
  readonly preemptions: number;
}

export const ZERO_COUNTERS: EngineCounters = {
  prefixHitTokens: 0,
  prefixQueryTokens: 0,
  promptTokens: 0,
  generationTokens: 0,
  requests: 0,
  preemptions: 0,
};

/** Counter value under the OpenMetrics `_total` name or the bare name, 0 if absent. */
function counter(samples: readonly Sample[], base: string): number {
  return sumMetric(samples, `${base}_total`) ?? sumMetric(samples, base) ?? 0;
}

export function countersFromSamples(samples: readonly Sample[]): EngineCounters {
  return {
    prefixHitTokens: counter(samples, 'vllm:prefix_cache_hits'),
    prefixQueryTokens: counter(samples, 'vllm:prefix_cache_queries'),
    promptTokens: counter(samples, 'vllm:prompt_tokens'),
    generationTokens: counter(samples, 'vllm:generation_tokens'),
    requests: counter(samples, 'vllm:request_success'),
    preemptions: counter(samples, 'vllm:num_preemptions'),
  };
}

/** after − before, field by field (a counter reset in between shows up as a negative and is clamped to `after`). */
export function counterDelta(before: EngineCounters, after: EngineCounters): EngineCounters {
  const d = (k: keyof EngineCounters): number => {
    const v = after[k] - before[k];
    return v < 0 ? after[k] : v;
  };
  return {
    prefixHitTokens: d('prefixHitTokens'),
    prefixQueryTokens: d('prefixQueryTokens'),
    promptTokens: d('promptTokens'),
    generationTokens: d('generationTokens'),
    requests: d('requests'),
    preemptions: d('preemptions'),
  };
}
