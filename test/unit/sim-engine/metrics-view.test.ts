import { expect } from 'chai';
import { ManualClock } from '../../../src/util/clock.js';
import { BatchingEngine, GPU_LIKE_ENGINE_MODEL } from '../../../src/simulate/engine/batching-engine.js';
import { MetricsView } from '../../../bench/sim-engine/metrics-view.js';
import { ManualStepScheduler } from '../../../src/simulate/engine/step-scheduler.js';

function setup(delayMs: number) {
  const clock = new ManualClock(0);
  const sched = new ManualStepScheduler(clock);
  let view: MetricsView | undefined;
  const engine = new BatchingEngine(GPU_LIKE_ENGINE_MODEL, { clock, scheduler: sched, onChange: () => view?.record() });
  view = new MetricsView(() => engine.snapshot(), clock, delayMs);
  const submit = (): void => {
    engine.submit({ promptTokens: [1, 2, 3], outputTokens: 1, finishReason: 'length' }, { onToken() {}, onFinish() {}, onError() {} });
  };
  return { clock, sched, engine, view, submit };
}

describe('sim-engine MetricsView', () => {
  it('serves live values without delay', () => {
    const s = setup(0);
    s.submit();
    expect(s.view.current().waiting).to.equal(1);
  });

  it('serves values as they were delayMs ago', () => {
    const s = setup(100);
    s.clock.set(10);
    s.submit(); // waiting=1 at t=10
    s.clock.set(50);
    expect(s.view.current().waiting).to.equal(0); // t=50: nothing older than 100 ms but the start
    s.clock.set(115);
    expect(s.view.current().waiting).to.equal(1); // the t=10 state
    s.sched.runAll(); // finishes the request at ~t=123
    const doneAt = s.clock.nowMs();
    expect(s.view.current().counters.success.length).to.equal(0);
    s.clock.set(doneAt + 100);
    expect(s.view.current().counters.success.length).to.equal(1);
  });

  it('freezes and unfreezes', () => {
    const s = setup(0);
    s.view.freeze();
    s.submit();
    expect(s.view.current().waiting).to.equal(0);
    s.view.unfreeze();
    expect(s.view.current().waiting).to.equal(1);
  });
});
