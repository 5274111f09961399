/**
 * How the batching engine waits for a simulated GPU step to finish. Production uses real
 * timers; unit tests use ManualStepScheduler, which holds callbacks until the test runs
 * them and moves a ManualClock to each callback's due time, so every step is observable
 * and deterministic without sleeping.
 */
import type { ManualClock } from '../../util/clock.js';

/** Cancels a scheduled callback; calling it after the callback ran is harmless. */
export type CancelFn = () => void;

export interface StepScheduler {
  /** Runs `fn` once after `delayMs` milliseconds (0 = as soon as possible, asynchronously). */
  schedule(delayMs: number, fn: () => void): CancelFn;
}

/** Real timers: setImmediate for 0 ms (no 1 ms timer floor), setTimeout otherwise; none when idle. */
export const timerStepScheduler: StepScheduler = {
  schedule(delayMs, fn) {
    if (delayMs <= 0) {
      const im = setImmediate(fn);
      return () => clearImmediate(im);
    }
    const t = setTimeout(fn, delayMs);
    return () => clearTimeout(t);
  },
};

interface Pending {
  readonly dueMs: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/** Test scheduler: callbacks run only when the test calls runNext()/runAll(). */
export class ManualStepScheduler implements StepScheduler {
  private pending: Pending[] = [];
  private seq = 0;

  constructor(private readonly clock: ManualClock) {}

  schedule(delayMs: number, fn: () => void): CancelFn {
    const p: Pending = { dueMs: this.clock.nowMs() + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    this.pending.push(p);
    return () => {
      p.cancelled = true;
    };
  }

  /** Number of callbacks waiting to run. */
  get size(): number {
    return this.pending.filter((p) => !p.cancelled).length;
  }

  /** Due time of the next callback, or undefined when nothing is scheduled. */
  nextDueMs(): number | undefined {
    return this.peek()?.dueMs;
  }

  /** Advances the clock to the earliest callback's due time and runs it. Returns false if none. */
  runNext(): boolean {
    const next = this.peek();
    if (!next) return false;
    this.pending = this.pending.filter((p) => p !== next && !p.cancelled);
    if (next.dueMs > this.clock.nowMs()) this.clock.set(next.dueMs);
    next.fn();
    return true;
  }

  /** Runs callbacks until none are left (bounded, to catch runaway loops in tests). */
  runAll(maxCallbacks = 1_000_000): number {
    let n = 0;
    while (this.runNext()) {
      if (++n >= maxCallbacks) throw new Error(`ManualStepScheduler: more than ${maxCallbacks} callbacks`);
    }
    return n;
  }

  private peek(): Pending | undefined {
    let best: Pending | undefined;
    for (const p of this.pending) {
      if (p.cancelled) continue;
      if (!best || p.dueMs < best.dueMs || (p.dueMs === best.dueMs && p.seq < best.seq)) best = p;
    }
    return best;
  }
}
