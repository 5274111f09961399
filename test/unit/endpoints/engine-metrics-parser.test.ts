import { expect } from 'chai';
import fc from 'fast-check';
import { parseEngineMetrics } from '../../../src/endpoints/engine-metrics-parser.js';

const VLLM_PAGE = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m1"} 3.0
vllm:num_requests_running{engine="0",model_name="m2"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m1"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="m1"} 0.25
vllm:kv_cache_usage_perc{engine="0",model_name="m2"} 0.5
vllm:prefix_cache_queries_total{engine="0",model_name="m1"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m1"} 750.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",num_gpu_blocks="31250",num_cpu_blocks="None"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m1"} 0.0
vllm:time_to_first_token_seconds_sum{model_name="m1"} 12.5
`;

describe('load/engine-metrics-parser', () => {
  it('reads vLLM gauges, counters and cache config, summing counts and maxing fractions', () => {
    const s = parseEngineMetrics(VLLM_PAGE);
    expect(s.engine).to.equal('vllm');
    expect(s.running).to.equal(5);
    expect(s.waiting).to.equal(7);
    expect(s.kvUsage).to.equal(0.5);
    expect(s.prefixCacheQueries).to.equal(1000);
    expect(s.prefixCacheHits).to.equal(750);
    expect(s.blockSizeTokens).to.equal(16);
    expect(s.numBlocks).to.equal(31250);
  });

  it('reads the older vllm:gpu_cache_usage_perc name and counters without _total', () => {
    const s = parseEngineMetrics(
      'vllm:gpu_cache_usage_perc{model_name="x"} 0.75\nvllm:gpu_prefix_cache_queries{model_name="x"} 10\nvllm:gpu_prefix_cache_hits{model_name="x"} 4\n',
    );
    expect(s.kvUsage).to.equal(0.75);
    expect(s.prefixCacheQueries).to.equal(10);
    expect(s.prefixCacheHits).to.equal(4);
  });

  it('reads SGLang names and its page_size/num_pages config', () => {
    const s = parseEngineMetrics(
      [
        '# TYPE sglang:num_queue_reqs gauge',
        'sglang:num_queue_reqs{model_name="q"} 4',
        'sglang:num_running_reqs{model_name="q"} 9',
        'sglang:token_usage{model_name="q"} 0.61',
        'sglang:cache_hit_rate{model_name="q"} 0.4',
        'sglang:cache_config_info{page_size="1",num_pages="200000"} 1',
      ].join('\r\n'),
    );
    expect(s).to.deep.equal({
      engine: 'sglang',
      waiting: 4,
      running: 9,
      kvUsage: 0.61,
      cacheHitRate: 0.4,
      blockSizeTokens: 1,
      numBlocks: 200000,
    });
  });

  it('handles escaped quotes, commas and braces inside label values, and timestamps', () => {
    const s = parseEngineMetrics('vllm:num_requests_waiting{model_name="a \\"b\\", {c}"} 6 1700000000000\nvllm:num_requests_running 2\n');
    expect(s.waiting).to.equal(6);
    expect(s.running).to.equal(2);
  });

  it('ignores malformed lines, NaN values and unterminated labels but keeps the rest', () => {
    const s = parseEngineMetrics(
      [
        'vllm:num_requests_waiting{model_name="x 3',
        'vllm:num_requests_running{model_name="x"} NaN',
        'vllm:num_requests_running{model_name="x"} abc',
        'vllm:kv_cache_usage_perc{model_name="x"} 1.7',
        'vllm:num_requests_waiting{model_name="y"} 2',
        'vllm:num_requests_waiting',
      ].join('\n'),
    );
    expect(s.waiting).to.equal(2);
    expect(s.running).to.equal(undefined);
    expect(s.kvUsage).to.equal(1, 'fractions are clamped to [0,1]');
  });

  it('skips lines longer than maxLineChars and stops at maxChars', () => {
    const long = `vllm:num_requests_waiting{model_name="${'x'.repeat(200)}"} 9\n`;
    const page = long + 'vllm:num_requests_running 1\n' + 'vllm:kv_cache_usage_perc 0.3\n';
    const s = parseEngineMetrics(page, { maxLineChars: 100, maxChars: long.length + 'vllm:num_requests_running 1\n'.length });
    expect(s.waiting).to.equal(undefined);
    expect(s.running).to.equal(1);
    expect(s.kvUsage).to.equal(undefined);
  });

  it('returns engine "unknown" and no fields for a page without known names', () => {
    expect(parseEngineMetrics('# nothing\nfoo_bar 1\n')).to.deep.equal({ engine: 'unknown' });
  });

  it('never throws and only yields finite, non-negative numbers on arbitrary input', () => {
    const names = ['vllm:num_requests_waiting', 'sglang:token_usage', 'vllm:cache_config_info', 'x'];
    const line = fc
      .tuple(fc.constantFrom(...names), fc.string({ maxLength: 30 }), fc.string({ maxLength: 12 }))
      .map(([n, l, v]) => `${n}${l} ${v}`);
    fc.assert(
      fc.property(fc.array(fc.oneof(line, fc.string({ maxLength: 60 })), { maxLength: 20 }), (lines) => {
        const s = parseEngineMetrics(lines.join('\n'));
        for (const v of Object.values(s)) {
          if (typeof v === 'number') expect(Number.isFinite(v) && v >= 0).to.equal(true);
        }
      }),
      { seed: 7, numRuns: 300 },
    );
  });

  it('reads vLLM 0.32 waiting-by-reason gauges per reason, bounded', () => {
    const page = [
      'vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 2.0',
      'vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="deferred"} 1.0',
      'vllm:num_requests_waiting_by_reason{engine="1",model_name="m",reason="capacity"} 3.0',
      'vllm:num_requests_waiting_by_reason{engine="0",model_name="m"} 9.0',
      ...Array.from({ length: 40 }, (_, i) => `vllm:num_requests_waiting_by_reason{reason="r${i}"} 1.0`),
    ].join('\n');
    const s = parseEngineMetrics(page);
    expect(s.waitingByReason?.['capacity']).to.equal(5);
    expect(s.waitingByReason?.['deferred']).to.equal(1);
    expect(Object.keys(s.waitingByReason ?? {}).length).to.equal(16);
  });
});
