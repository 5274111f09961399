/** Injectable time source so every time-dependent rule is testable without sleeping. */
export interface Clock {
  /** Milliseconds, monotonic (not wall time). */
  nowMs(): number;
  /** Microsecond-resolution monotonic time, for measuring short durations. */
  nowMicros(): number;
}

export const systemClock: Clock = {
  nowMs: () => performance.now(),
  nowMicros: () => performance.now() * 1000,
};

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  constructor(private ms = 0) {}
  nowMs(): number {
    return this.ms;
  }
  nowMicros(): number {
    return this.ms * 1000;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}
