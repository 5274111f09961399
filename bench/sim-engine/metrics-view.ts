/**
 * What /metrics shows, as opposed to what the engine is doing: the live snapshot, one
 * frozen at a moment (POST /admin/freeze-metrics), or one `delayMs` old (--metrics-delay-ms).
 * These knobs let tests and benchmarks measure how a router copes with stale load data.
 * Delayed views keep a history of snapshots taken at every engine state change (values
 * only change then), pruned to the newest one older than the delay; no timers.
 */
import type { Clock } from '../../src/util/clock.js';
import type { EngineSnapshot } from '../../src/simulate/engine/batching-engine.js';

interface Stamped {
  readonly atMs: number;
  readonly snap: EngineSnapshot;
}

export class MetricsView {
  private frozen: EngineSnapshot | undefined;
  private history: Stamped[] = [];

  constructor(
    private readonly live: () => EngineSnapshot,
    private readonly clock: Clock,
    private delayMs = 0,
  ) {
    if (delayMs > 0) this.record();
  }

  get metricsDelayMs(): number {
    return this.delayMs;
  }

  get isFrozen(): boolean {
    return this.frozen !== undefined;
  }

  setDelay(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`metrics delay must be >= 0, got ${ms}`);
    this.delayMs = ms;
    this.history = [];
    if (ms > 0) this.record();
  }

  /** Call on every engine state change. */
  record(): void {
    if (this.delayMs <= 0) return;
    const now = this.clock.nowMs();
    this.history.push({ atMs: now, snap: this.live() });
    this.prune(now);
  }

  freeze(): void {
    this.frozen = this.current();
  }

  unfreeze(): void {
    this.frozen = undefined;
  }

  /** Drops history so a reset is visible at once (the delay restarts from now). */
  resetHistory(): void {
    this.history = [];
    if (this.delayMs > 0) this.record();
  }

  /** The snapshot /metrics should serve now. */
  current(): EngineSnapshot {
    if (this.frozen) return this.frozen;
    if (this.delayMs <= 0) return this.live();
    const now = this.clock.nowMs();
    this.prune(now);
    let pick: EngineSnapshot | undefined;
    for (const h of this.history) {
      if (h.atMs + this.delayMs <= now) pick = h.snap;
      else break;
    }
    // Younger than the delay since start: serve the oldest we have.
    return pick ?? this.history[0]?.snap ?? this.live();
  }

  private prune(now: number): void {
    // Keep the newest entry at least delayMs old plus everything after it.
    let firstKeep = 0;
    for (let i = 0; i < this.history.length; i++) {
      if (this.history[i]!.atMs + this.delayMs <= now) firstKeep = i;
      else break;
    }
    if (firstKeep > 0) this.history.splice(0, firstKeep);
  }
}
