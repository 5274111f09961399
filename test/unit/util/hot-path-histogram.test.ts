import { expect } from 'chai';
import { Histogram, Registry } from 'prom-client';
import { HotPathHistogram } from '../../../src/util/hot-path-histogram.js';
import { DECISION_LATENCY_BUCKETS } from '../../../src/telemetry/metrics.js';
import { seededRng } from '../../../src/util/rng.js';

describe('util/hot-path-histogram', () => {
  it('renders exactly what prom-client Histogram renders for the same observations', async () => {
    const rng = seededRng(9);
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Histogram({
      name: 'x_seconds',
      help: 'h',
      labelNames: ['strategy'],
      buckets: [...DECISION_LATENCY_BUCKETS],
      registers: [theirs],
    });
    const fast = new HotPathHistogram('x_seconds', 'h', 'strategy', DECISION_LATENCY_BUCKETS, [ours]);
    const strategies = ['cache-aware', 'round-robin', 'other'];
    for (let i = 0; i < 2000; i++) {
      const s = strategies[rng.int(strategies.length)]!;
      // Exact bounds, values between them, above the top bucket, and zero.
      const v =
        i % 97 === 0 ? DECISION_LATENCY_BUCKETS[rng.int(DECISION_LATENCY_BUCKETS.length)]! : i % 89 === 0 ? 0.5 : rng.next() * 0.004;
      reference.observe({ strategy: s }, v);
      fast.observe(fast.cell(s), v);
    }
    expect(await ours.metrics()).to.equal(await theirs.metrics());
  });

  it('renders nothing until a label value is used, and a used value with zero observations as zeros', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Histogram({ name: 'y_seconds', help: 'h', labelNames: ['strategy'], buckets: [0.1, 1], registers: [theirs] });
    const fast = new HotPathHistogram('y_seconds', 'h', 'strategy', [0.1, 1], [ours]);
    expect(await ours.metrics()).to.equal(await theirs.metrics());
    reference.zero({ strategy: 'a' });
    fast.cell('a');
    expect(await ours.metrics()).to.equal(await theirs.metrics());
  });
});
