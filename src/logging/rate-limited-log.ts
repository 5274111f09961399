/**
 * Per-cause log rate limiting: at most `burst` lines per cause in each `intervalMs` window;
 * the rest are counted, and the next line written for that cause carries the count
 * (`suppressed`), so a flood of identical failures costs a few lines plus a number instead
 * of one line per event.
 *
 * Why per cause, not global: one noisy cause (a misbehaving client sending bad streams)
 * must not hide a different, rare one (an engine going away). Causes are code-level
 * strings (error codes, event names), never request data, and their number is bounded.
 */
import type { Clock } from '../util/clock.js';
import type { LogFields } from './logger.js';

export interface RateLimitedLogOptions {
  readonly clock: Clock;
  /** Lines per cause per window (default 5). */
  readonly burst?: number;
  /** Window length (default 10 s). */
  readonly intervalMs?: number;
  /** Causes tracked at most; further causes share one bucket (default 256). */
  readonly maxCauses?: number;
}

interface Bucket {
  windowStartMs: number;
  written: number;
  suppressed: number;
}

const OVERFLOW_CAUSE = '(other)';

export class RateLimitedLog {
  private readonly burst: number;
  private readonly intervalMs: number;
  private readonly maxCauses: number;
  private readonly buckets = new Map<string, Bucket>();
  private suppressedTotal = 0;

  constructor(private readonly opts: RateLimitedLogOptions) {
    this.burst = Math.max(1, Math.floor(opts.burst ?? 5));
    this.intervalMs = Math.max(1, opts.intervalMs ?? 10_000);
    this.maxCauses = Math.max(1, opts.maxCauses ?? 256);
  }

  /**
   * Calls `write` with the extra fields to add (`suppressed` when earlier lines of this
   * cause were dropped) unless the cause is over its budget. Returns whether it wrote.
   */
  log(cause: string, write: (extra: LogFields) => void): boolean {
    const now = this.opts.clock.nowMs();
    const b = this.bucket(cause, now);
    if (now - b.windowStartMs >= this.intervalMs) {
      b.windowStartMs = now;
      b.written = 0;
    }
    if (b.written >= this.burst) {
      b.suppressed++;
      this.suppressedTotal++;
      return false;
    }
    b.written++;
    const extra: LogFields = b.suppressed > 0 ? { suppressed: b.suppressed } : {};
    b.suppressed = 0;
    write(extra);
    return true;
  }

  /** Lines dropped so far, all causes. */
  get suppressed(): number {
    return this.suppressedTotal;
  }

  /**
   * Counts still unreported (dropped since the cause's last written line), by cause; resets
   * them. For a summary line at shutdown.
   */
  drainSuppressed(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [cause, b] of this.buckets) {
      if (b.suppressed > 0) out[cause] = b.suppressed;
      b.suppressed = 0;
    }
    return out;
  }

  private bucket(cause: string, now: number): Bucket {
    let b = this.buckets.get(cause);
    if (b !== undefined) return b;
    const key = this.buckets.size >= this.maxCauses ? OVERFLOW_CAUSE : cause;
    b = this.buckets.get(key);
    if (b === undefined) {
      b = { windowStartMs: now, written: 0, suppressed: 0 };
      this.buckets.set(key, b);
    }
    return b;
  }
}
