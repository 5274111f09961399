/**
 * Virtual time for the fleet simulator: one clock and one queue of timed callbacks that
 * every simulated component (engines' step loops, scrapes, completions, arrivals) and the
 * real router share. Time jumps from one callback to the next, so a run costs CPU only for
 * the work it models, never for waiting, and two runs with the same inputs are identical.
 *
 * Why a binary heap with a sequence number: at fleet scale tens of thousands of callbacks
 * are pending (one step per busy engine, one scrape per engine per router replica, one
 * completion per request), so a sorted list would cost O(n) per insert; callbacks due at
 * the same instant run in the order they were scheduled, which keeps runs deterministic.
 * A cancelled callback stays in the heap and is skipped when it comes up (cheaper than
 * removing it).
 *
 * Why `atEach`: a workload's arrivals (100,000 in the speed study) are known up front; as
 * 100,000 heap entries they make every other insert and removal sift through ~17 levels.
 * atEach takes their sequence numbers at once, as that many at() calls would, but keeps
 * only the next one in the heap, so the order of every callback is the same.
 */
import type { Clock } from '../util/clock.js';
import type { CancelFn, StepScheduler } from './engine/step-scheduler.js';

interface Timer {
  dueMs: number;
  seq: number;
  fn: (() => void) | undefined;
}

export class VirtualTime implements Clock, StepScheduler {
  private nowValue = 0;
  private heap: Timer[] = [];
  private seq = 0;
  private ran = 0;
  private stopped = false;
  /** atEach callbacks not in the heap yet. */
  private streamed = 0;

  nowMs(): number {
    return this.nowValue;
  }

  nowMicros(): number {
    return this.nowValue * 1000;
  }

  /** Callbacks run so far. */
  get callbacks(): number {
    return this.ran;
  }

  /** Callbacks waiting (cancelled ones included until they come up). */
  get pending(): number {
    return this.heap.length + this.streamed;
  }

  /** Runs `fn` `delayMs` from now (StepScheduler; 0 = after what is already due now). */
  schedule(delayMs: number, fn: () => void): CancelFn {
    return this.at(this.nowValue + Math.max(0, delayMs), fn);
  }

  /** Runs `fn` at virtual time `ms` (a time in the past means now). */
  at(ms: number, fn: () => void): CancelFn {
    const t: Timer = { dueMs: Math.max(ms, this.nowValue), seq: this.seq++, fn };
    this.insert(t);
    return () => {
      t.fn = undefined;
    };
  }

  /** Moves an atEach callback into the heap. */
  private push(t: Timer): void {
    this.streamed--;
    this.insert(t);
  }

  private insert(t: Timer): void {
    const h = this.heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(t, h[p]!)) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = t;
  }

  /**
   * Runs `fn(i)` at virtual time `times[i]` for every i: the same callbacks in the same order
   * as `times.forEach((ms, i) => at(ms, () => fn(i)))`, holding one heap entry at a time.
   */
  atEach(times: readonly number[], fn: (i: number) => void): void {
    const n = times.length;
    if (n === 0) return;
    const now = this.nowValue;
    const due = times.map((ms) => Math.max(ms, now));
    const order = Array.from({ length: n }, (_, i) => i);
    let sorted = true;
    for (let i = 1; i < n && sorted; i++) sorted = due[i - 1]! <= due[i]!;
    if (!sorted) order.sort((a, b) => due[a]! - due[b]! || a - b);
    const seq0 = this.seq;
    this.seq += n;
    this.streamed += n;
    let k = 0;
    const next = (): void => {
      const i = order[k++]!;
      if (k < n) this.push({ dueMs: due[order[k]!]!, seq: seq0 + order[k]!, fn: next });
      fn(i);
    };
    this.push({ dueMs: due[order[0]!]!, seq: seq0 + order[0]!, fn: next });
  }

  /** Makes run() return after the current callback (the simulation is over). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Runs callbacks in time order until none is left, the next is after `untilMs`, or
   * `maxCallbacks` ran. Returns false when it stopped because of `maxCallbacks`.
   */
  run(untilMs = Number.POSITIVE_INFINITY, maxCallbacks = Number.POSITIVE_INFINITY): boolean {
    const h = this.heap;
    let n = 0;
    this.stopped = false;
    while (h.length > 0 && !this.stopped) {
      const top = h[0]!;
      if (top.dueMs > untilMs) return true;
      this.pop();
      const fn = top.fn;
      if (fn === undefined) continue;
      top.fn = undefined;
      this.nowValue = top.dueMs;
      this.ran++;
      fn();
      if (++n >= maxCallbacks) return false;
    }
    return true;
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    let i = 0;
    const n = h.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(h[r]!, h[l]!) ? r : l;
      if (!before(h[c]!, last)) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq);
}
