import { expect } from 'chai';
import { counterDelta, countersFromSamples } from '../../../../bench/stats/engine-counters.js';
import { histogramDelta, histogramMean, histogramQuantile, readHistogram } from '../../../../bench/stats/histogram-delta.js';
import { parsePrometheusText, sumMetric } from '../../../kit/prometheus-text.js';

const TEXT = `# HELP vllm:prefix_cache_hits_total Prefix cache hits, in tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{model_name="m",engine="0"} 1200
vllm:prefix_cache_queries_total{model_name="m",engine="0"} 4000
vllm:prompt_tokens_total{model_name="m"} 4000
vllm:generation_tokens_total{model_name="m"} 320
vllm:request_success_total{model_name="m",finished_reason="length"} 9
vllm:request_success_total{model_name="m",finished_reason="stop"} 1
vllm:num_requests_running{model_name="m"} 2
weird_label{a="x\\"y",b="1"} 3
broken line here
nan_metric NaN
d_bucket{le="0.001"} 2
d_bucket{le="0.01"} 8
d_bucket{le="+Inf"} 10
d_sum 0.05
d_count 10
`;

describe('bench/stats/prometheus-text and friends', () => {
  const samples = parsePrometheusText(TEXT);

  it('parses names, labels (with escapes) and values; skips comments and junk', () => {
    expect(samples.find((s) => s.name === 'weird_label')?.labels).to.deep.equal({ a: 'x"y', b: '1' });
    expect(samples.some((s) => s.name === 'broken')).to.equal(false);
    expect(samples.some((s) => s.name === 'nan_metric')).to.equal(false);
    expect(sumMetric(samples, 'vllm:request_success_total')).to.equal(10);
    expect(sumMetric(samples, 'vllm:request_success_total', { finished_reason: 'stop' })).to.equal(1);
    expect(sumMetric(samples, 'absent')).to.equal(undefined);
  });

  it('reads vLLM counters and takes deltas', () => {
    const c = countersFromSamples(samples);
    expect(c).to.deep.equal({
      prefixHitTokens: 1200,
      prefixQueryTokens: 4000,
      promptTokens: 4000,
      generationTokens: 320,
      requests: 10,
      preemptions: 0,
    });
    const later = { ...c, prefixHitTokens: 2000, requests: 15 };
    const d = counterDelta(c, later);
    expect(d.prefixHitTokens).to.equal(800);
    expect(d.requests).to.equal(5);
    expect(d.promptTokens).to.equal(0);
    // a reset in between: the delta is the new value
    expect(counterDelta(later, { ...c, requests: 3 }).requests).to.equal(3);
  });

  it('estimates quantiles from histogram buckets like histogram_quantile', () => {
    const h = readHistogram(samples, 'd');
    expect(h).to.not.equal(undefined);
    const data = h as NonNullable<typeof h>;
    expect(histogramMean(data)).to.be.closeTo(0.005, 1e-12);
    // rank 5 of 10 falls in (0.001, 0.01]: 0.001 + 0.009 × (5-2)/6
    expect(histogramQuantile(data, 0.5)).to.be.closeTo(0.001 + 0.009 * 0.5, 1e-12);
    // ranks in +Inf return the last finite bound
    expect(histogramQuantile(data, 0.95)).to.equal(0.01);
    const before = {
      buckets: [
        { le: 0.001, count: 2 },
        { le: 0.01, count: 2 },
        { le: Number.POSITIVE_INFINITY, count: 2 },
      ],
      sum: 0.001,
      count: 2,
    };
    const d = histogramDelta(before, data);
    expect(d.count).to.equal(8);
    expect(d.buckets.map((b) => b.count)).to.deep.equal([0, 6, 8]);
    expect(histogramQuantile({ buckets: [], sum: 0, count: 0 }, 0.5)).to.equal(null);
  });
});
