import { expect } from 'chai';
import { EngineHealthTracker, type EngineHealthOptions } from '../../../src/health/engine-health-tracker.js';
import { RestartDetector } from '../../../src/health/restart-detector.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';

const E = '10.0.0.1:8000';

function tracker(over: Partial<EngineHealthOptions> = {}) {
  const clock = new ManualClock(0);
  const events: string[] = [];
  const t = new EngineHealthTracker({
    clock,
    unhealthyThreshold: 2,
    healthyThreshold: 1,
    consecutiveFailures: 3,
    baseEjectionMs: 1000,
    maxEjectionMs: 8000,
    onDown: (id, reason) => events.push(`down ${id} ${reason}`),
    onUp: (id, how) => events.push(`up ${id} ${how}`),
    onRestart: (id, reason) => events.push(`restart ${id} ${reason}`),
    ...over,
  });
  return { t, clock, events };
}

describe('health/engine-health-tracker', () => {
  it('takes an engine out at once on a refused connection, after the threshold on other failures', () => {
    const { t, events } = tracker();
    t.recordActive(E, 'timeout');
    expect(t.isRoutable(E)).to.equal(true);
    t.recordActive(E, 'timeout');
    expect(t.isRoutable(E)).to.equal(false);
    const other = '10.0.0.2:8000';
    t.recordActive(other, 'refused');
    expect(t.isRoutable(other)).to.equal(false);
    expect(events).to.deep.equal([`down ${E} active`, `down ${other} active`]);
  });

  it('re-admits on a good active check and reports a restart after refused connections', () => {
    const { t, events } = tracker();
    t.recordActive(E, 'refused');
    t.recordActive(E, 'refused');
    t.recordActive(E, 'ok');
    expect(t.isRoutable(E)).to.equal(true);
    expect(events).to.deep.equal([`down ${E} active`, `restart ${E} came back after refused connections`, `up ${E} active-check`]);
    // Timeouts are not a restart (the process may have been alive all along).
    const { t: t2, events: ev2 } = tracker();
    t2.recordActive(E, 'timeout');
    t2.recordActive(E, 'timeout');
    t2.recordActive(E, 'ok');
    expect(ev2.some((e) => e.startsWith('restart'))).to.equal(false);
  });

  it('ejects after consecutive passive failures with a doubling backoff and half-open probation', () => {
    const { t, clock, events } = tracker();
    const fail = () => t.recordFailure(E, 'http-5xx', 'status 500');
    fail();
    fail();
    t.recordSuccess(E, 'response'); // a success in between resets the run
    fail();
    fail();
    expect(t.isRoutable(E)).to.equal(true);
    fail();
    expect(t.isRoutable(E)).to.equal(false);
    expect(t.view(E).ejectedForMs).to.equal(1000);
    clock.advance(999);
    expect(t.isRoutable(E)).to.equal(false);
    clock.advance(1);
    // Half-open: routable, and a single failure ejects again for twice as long.
    expect(t.isRoutable(E)).to.equal(true);
    t.tick();
    expect(t.view(E).halfOpen).to.equal(true);
    fail();
    expect(t.view(E).ejectedForMs).to.equal(2000);
    clock.advance(2000);
    fail();
    expect(t.view(E).ejectedForMs).to.equal(4000);
    clock.advance(4000);
    fail();
    expect(t.view(E).ejectedForMs).to.equal(8000);
    clock.advance(8000);
    fail();
    expect(t.view(E).ejectedForMs, 'capped at maxEjectionMs').to.equal(8000);
    clock.advance(8000);
    t.recordSuccess(E, 'response');
    expect(t.view(E).halfOpen, 'a success closes half-open').to.equal(false);
    // Long healthy: the backoff starts over.
    clock.advance(100_000);
    fail();
    fail();
    fail();
    expect(t.view(E).ejectedForMs).to.equal(1000);
    expect(events.filter((e) => e.startsWith('down')).length).to.equal(6);
  });

  it('does not let good scrapes hide failing responses (classes are counted apart)', () => {
    const { t } = tracker();
    for (let i = 0; i < 3; i++) {
      t.recordFailure(E, 'http-5xx');
      t.recordSuccess(E, 'scrape');
    }
    expect(t.isRoutable(E)).to.equal(false);
  });

  it('ends an ejection early only when active checks saw the engine gone and back', () => {
    const { t, clock } = tracker();
    for (let i = 0; i < 3; i++) t.recordFailure(E, 'connect-failure');
    // /health fine all along: the ejection runs its course.
    t.recordActive(E, 'ok');
    expect(t.isRoutable(E)).to.equal(false);
    // Now it disappears and comes back: back at once.
    t.recordActive(E, 'refused');
    clock.advance(10);
    t.recordActive(E, 'ok');
    expect(t.isRoutable(E)).to.equal(true);
    expect(t.view(E).halfOpen).to.equal(false);
  });

  it('keeps every verdict consistent under a seeded random event sequence', () => {
    const rng = seededRng(7);
    const { t, clock } = tracker();
    for (let i = 0; i < 5000; i++) {
      const r = rng.int(6);
      if (r === 0) t.recordActive(E, 'ok');
      else if (r === 1) t.recordActive(E, rng.int(2) === 0 ? 'refused' : 'timeout');
      else if (r === 2) t.recordFailure(E, 'http-5xx');
      else if (r === 3) t.recordSuccess(E, 'response');
      else clock.advance(rng.int(700));
      const v = t.view(E);
      expect(v.routable).to.equal(v.activeUp && v.ejectedForMs === 0);
      expect(v.ejectedForMs).to.be.at.most(8000);
    }
  });
});

describe('health/restart-detector', () => {
  it('reports counters going backwards and a changed start time, not growth', () => {
    const d = new RestartDetector();
    expect(d.observe(E, { engine: 'vllm', prefixCacheQueries: 100, prefixCacheHits: 10, processStartTimeSeconds: 1000 })).to.equal(
      undefined,
    );
    expect(d.observe(E, { engine: 'vllm', prefixCacheQueries: 150, prefixCacheHits: 20, processStartTimeSeconds: 1000.4 })).to.equal(
      undefined,
    );
    expect(d.observe(E, { engine: 'vllm', prefixCacheQueries: 5, prefixCacheHits: 0, processStartTimeSeconds: 1000 })).to.equal(
      'counters went backwards',
    );
    expect(d.observe(E, { engine: 'vllm', prefixCacheQueries: 900, processStartTimeSeconds: 2000 })).to.equal('process start time changed');
    d.reset(E);
    expect(d.observe(E, { engine: 'vllm', prefixCacheQueries: 1 }), 'a reset makes the next scrape a baseline').to.equal(undefined);
  });
});
