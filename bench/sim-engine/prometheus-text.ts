/**
 * Renders an engine snapshot as Prometheus text (format 0.0.4) with vLLM's metric names,
 * every sample labelled model_name, so the router's scraper and other tools parse it
 * exactly as they would a real vLLM /metrics page. Counters carry the `_total` suffix
 * in HELP/TYPE lines too, as Python's prometheus_client (used by vLLM) writes them.
 */
import type { EngineSnapshot } from '../../src/simulate/engine/batching-engine.js';
import type { HistogramSnapshot } from '../../src/simulate/engine/histogram.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * @param processStartTimeSeconds wall-clock start of the engine process, rendered as
 *   prometheus_client's `process_start_time_seconds` (vLLM exports it; routers use it to
 *   notice a restart).
 */
export function renderVllmMetrics(snap: EngineSnapshot, modelName: string, processStartTimeSeconds?: number): string {
  const base = `model_name="${escapeLabel(modelName)}"`;
  const c = snap.counters;
  const out: string[] = [];
  const gauge = (name: string, help: string, v: number): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}{${base}} ${fmt(v)}`);
  };
  const counter = (name: string, help: string, v: number): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name}{${base}} ${fmt(v)}`);
  };
  const histogram = (name: string, help: string, h: HistogramSnapshot): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
    let cum = 0;
    for (let i = 0; i < h.bounds.length; i++) {
      cum += h.counts[i] ?? 0;
      out.push(`${name}_bucket{${base},le="${fmt(h.bounds[i]!)}"} ${cum}`);
    }
    out.push(`${name}_bucket{${base},le="+Inf"} ${h.count}`, `${name}_sum{${base}} ${fmt(h.sum)}`, `${name}_count{${base}} ${h.count}`);
  };

  gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', snap.running);
  gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', snap.waiting);
  gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', snap.kvUsage);
  counter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.', c.prefixQueryTokens);
  counter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.', c.prefixHitTokens);
  out.push(
    '# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig',
    '# TYPE vllm:cache_config_info gauge',
    `vllm:cache_config_info{block_size="${snap.blockSize}",enable_prefix_caching="True",${base},num_gpu_blocks="${snap.kvCapacityBlocks}"} 1`,
  );
  counter('vllm:num_preemptions_total', 'Cumulative number of preemption from the engine.', c.preemptions);
  counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.', c.promptTokens);
  counter('vllm:generation_tokens_total', 'Number of generation tokens processed.', c.generationTokens);
  out.push('# HELP vllm:request_success_total Count of successfully processed requests.', '# TYPE vllm:request_success_total counter');
  for (const reason of ['stop', 'length'] as const) {
    out.push(`vllm:request_success_total{finished_reason="${reason}",${base}} ${c.success[reason]}`);
  }
  histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', c.ttft);
  histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', c.e2e);
  histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', c.queueTime);
  if (processStartTimeSeconds !== undefined) {
    out.push(
      '# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.',
      '# TYPE process_start_time_seconds gauge',
      `process_start_time_seconds ${fmt(processStartTimeSeconds)}`,
    );
  }
  return out.join('\n') + '\n';
}

function fmt(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(12)));
}

function escapeLabel(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
