import { expect } from 'chai';
import { ManualClock } from '../../../src/util/clock.js';
import { EngineSignalStore } from '../../../src/endpoints/engine-metrics-store.js';

describe('load/engine-metrics-store', () => {
  it('stamps samples with scrape time and reports their age', () => {
    const clock = new ManualClock(1000);
    const store = new EngineSignalStore(clock);
    expect(store.ageMs('a')).to.equal(Number.POSITIVE_INFINITY);
    store.recordSuccess('a', { engine: 'vllm', waiting: 1 });
    clock.advance(250);
    expect(store.ageMs('a')).to.equal(250);
    expect(store.get('a')?.signals.waiting).to.equal(1);
  });

  it('keeps changedAtMs when a scrape repeats the same numbers and moves it when they change', () => {
    const clock = new ManualClock(0);
    const store = new EngineSignalStore(clock);
    store.recordSuccess('a', { engine: 'vllm', waiting: 1, running: 2 });
    clock.advance(100);
    const same = store.recordSuccess('a', { engine: 'vllm', waiting: 1, running: 2 });
    expect(same.scrapedAtMs).to.equal(100);
    expect(same.changedAtMs).to.equal(0);
    clock.advance(100);
    const moved = store.recordSuccess('a', { engine: 'vllm', waiting: 1, running: 3 });
    expect(moved.changedAtMs).to.equal(200);
    expect(store.stats()[0]?.contentAgeMs).to.equal(0);
  });

  it('derives the interval hit rate from counter deltas, treating a decrease as a restart', () => {
    const clock = new ManualClock(0);
    const store = new EngineSignalStore(clock);
    store.recordSuccess('a', { engine: 'vllm', prefixCacheQueries: 100, prefixCacheHits: 50 });
    const s1 = store.recordSuccess('a', { engine: 'vllm', prefixCacheQueries: 300, prefixCacheHits: 200 });
    expect(s1.intervalHitRate).to.be.closeTo(150 / 200, 1e-9);
    const s2 = store.recordSuccess('a', { engine: 'vllm', prefixCacheQueries: 40, prefixCacheHits: 10 });
    expect(s2.intervalHitRate).to.be.closeTo(10 / 40, 1e-9);
  });

  it('counts errors, keeps the last good sample ageing, and resets consecutive errors on success', () => {
    const clock = new ManualClock(0);
    const store = new EngineSignalStore(clock);
    store.recordSuccess('a', { engine: 'vllm', waiting: 4 }, 3);
    clock.advance(50);
    store.recordError('a', 'timeout', 500);
    store.recordError('a', 'x'.repeat(500));
    let st = store.stats()[0]!;
    expect(st.errors).to.equal(2);
    expect(st.consecutiveErrors).to.equal(2);
    expect(st.lastError?.length).to.equal(200);
    expect(st.ageMs).to.equal(50);
    expect(store.get('a')?.signals.waiting).to.equal(4);
    store.recordSuccess('a', { engine: 'vllm', waiting: 5 });
    st = store.stats()[0]!;
    expect(st.consecutiveErrors).to.equal(0);
    expect(st.scrapes).to.equal(4);
  });

  it('notifies subscribers synchronously and forgets endpoints not retained', () => {
    const store = new EngineSignalStore(new ManualClock());
    const seen: string[] = [];
    const off = store.subscribe((id) => seen.push(id));
    store.recordSuccess('a', { engine: 'vllm' });
    store.recordSuccess('b', { engine: 'vllm' });
    off();
    store.recordSuccess('c', { engine: 'vllm' });
    expect(seen).to.deep.equal(['a', 'b']);
    store.retain(['b']);
    expect(store.stats().map((s) => s.endpointId)).to.deep.equal(['b']);
  });
});
