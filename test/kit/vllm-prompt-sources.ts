/**
 * Where a vLLM engine's prompt tokens came from, by its own counter
 * `vllm:prompt_tokens_by_source_total{source}`: computed (`local_compute`), found in its prefix
 * cache (`local_cache_hit`) or loaded through a KV connector (`external_kv_transfer`). The
 * referee of prefill/decode disaggregation on real engines: read before and after a request.
 */
import { httpRequest } from './http-client.js';
import { sumSamples } from './prometheus-text.js';

export const PROMPT_SOURCES = ['local_compute', 'local_cache_hit', 'external_kv_transfer'] as const;
export type PromptSource = (typeof PROMPT_SOURCES)[number];
export type PromptTokensBySource = Record<PromptSource, number>;

export async function promptTokensBySource(metricsUrl: string): Promise<PromptTokensBySource> {
  const text = (await httpRequest(metricsUrl, { timeoutMs: 5000 })).text();
  const out = {} as PromptTokensBySource;
  for (const source of PROMPT_SOURCES) out[source] = sumSamples(text, 'vllm:prompt_tokens_by_source_total', { source });
  return out;
}

/** `after - before`, per source. */
export function sourceDelta(before: PromptTokensBySource, after: PromptTokensBySource): PromptTokensBySource {
  const out = {} as PromptTokensBySource;
  for (const s of PROMPT_SOURCES) out[s] = after[s] - before[s];
  return out;
}

export const sourceTotal = (d: PromptTokensBySource): number => PROMPT_SOURCES.reduce((n, s) => n + d[s], 0);
