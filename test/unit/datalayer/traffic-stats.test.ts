import { expect } from 'chai';
import { ManualClock } from '../../../src/util/clock.js';
import { TrafficStats } from '../../../src/datalayer/traffic-stats.js';

const opts = { windowMs: 10_000, buckets: 10, maxSeenKeys: 1000, maxKeysPerBucket: 100 };

describe('load/traffic-stats', () => {
  it('measures reuse as the share of requests whose prefix key was seen before', () => {
    const clock = new ManualClock(0);
    const s = new TrafficStats(clock, opts);
    for (let i = 0; i < 10; i++) s.recordDecision(i % 2 === 0 ? 7 : 100 + i, 'a', 0, 4);
    const snap = s.snapshot();
    expect(snap.requests).to.equal(10);
    expect(snap.reuseRate).to.be.closeTo(4 / 10, 1e-9); // key 7 five times: first is new
    expect(snap.hottestPrefixShare).to.be.closeTo(5 / 10, 1e-9);
    expect(snap.sharedRate).to.be.closeTo(5 / 10, 1e-9, 'key 7 occurs 5 times, the rest once');
    expect(snap.distinctPrefixes).to.equal(6);
  });

  it('slides: requests older than the window stop counting', () => {
    const clock = new ManualClock(0);
    const s = new TrafficStats(clock, opts);
    for (let i = 0; i < 5; i++) s.recordDecision(1, 'a', 1, 1);
    clock.advance(6000);
    for (let i = 0; i < 5; i++) s.recordDecision(1000 + i, 'a', 0, 1);
    expect(s.snapshot().requests).to.equal(10);
    clock.advance(5000);
    const snap = s.snapshot();
    expect(snap.requests).to.equal(5);
    expect(snap.reuseRate).to.equal(0);
    clock.advance(10_000);
    expect(s.snapshot().requests).to.equal(0);
    expect(s.snapshot().reuseRate).to.equal(0);
  });

  it('reports per-endpoint predicted and confirmed hit rates', () => {
    const clock = new ManualClock(0);
    const s = new TrafficStats(clock, opts);
    s.recordDecision(1, 'a', 3, 4);
    s.recordDecision(1, 'a', 1, 4);
    s.recordDecision(2, 'b', 0, 2);
    s.recordOutcome('a', 100, 25);
    s.recordOutcome('a', 100, 500); // cached above prompt is clamped
    s.recordOutcome('b', undefined, 5); // no usage: ignored
    const [a, b] = s.snapshot().endpoints;
    expect(a).to.deep.equal({ endpointId: 'a', requests: 2, predictedHitRate: 0.5, confirmedHitRate: 125 / 200, confirmedSamples: 2 });
    expect(b).to.deep.equal({ endpointId: 'b', requests: 1, predictedHitRate: 0, confirmedSamples: 0 });
  });

  it('stops counting reuse for keys not seen within seenTtlMs and bounds the remembered keys', () => {
    const clock = new ManualClock(0);
    const s = new TrafficStats(clock, { ...opts, seenTtlMs: 1000, maxSeenKeys: 2 });
    s.recordDecision(1, 'a', 0, 1);
    clock.advance(2000);
    s.recordDecision(1, 'a', 0, 1); // seen, but too long ago
    s.recordDecision(2, 'a', 0, 1);
    s.recordDecision(3, 'a', 0, 1); // evicts key 1
    s.recordDecision(1, 'a', 0, 1);
    expect(s.snapshot().reuseRate).to.equal(0);
    s.recordDecision(1, 'a', 0, 1);
    expect(s.snapshot().reuseRate).to.be.closeTo(1 / 6, 1e-9);
  });
});
