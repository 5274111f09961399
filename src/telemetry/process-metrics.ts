/**
 * The router process's own health: event-loop delay, CPU time and resident memory.
 *
 * Why: a Node router adds latency mostly by making callbacks wait behind each other — a
 * decision, a body chunk to echo and a metrics scrape all share one thread — so the
 * event-loop delay is the direct measure of "near-zero added latency" under load, and CPU
 * seconds per request is what sizing needs. Each scrape reads p50 / p99 / max of the delay
 * samples since the previous scrape and starts a new window (the windowing of prom-client's
 * nodejs_eventloop_lag_* gauges, so two scrapers share windows).
 *
 * The samples come from perf_hooks' monitorEventLoopDelay: a native libuv timer every
 * `resolutionMs` records the time between its runs (resolution + delay), in C++, so the
 * sampler costs a wake-up but no JavaScript per sample (a JS interval timer at the same
 * resolution cost about three times the CPU of the native one, and most of an idle router's).
 * Resetting that histogram skips its next sample, which would hide a stall right after a
 * scrape, so after each reset a JS guard timer runs every millisecond until the native
 * histogram has a sample again (about two resolutions); the guard's lateness joins the new
 * window (a window of a few ms is then not empty, and a stall in that gap is seen to the ms).
 *
 * Lifecycle: start() enables the sampler, stop() disables it (idempotent both); while
 * stopped the delay gauges export nothing.
 */
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, type Registry } from 'prom-client';

/** Sampling period of the delay monitor (prom-client's default precision). */
export const EVENT_LOOP_RESOLUTION_MS = 10;

/** `quantile` label values: median, 99th percentile and the maximum ("1"). */
export const EVENT_LOOP_QUANTILES = ['0.5', '0.99', '1'] as const;

/** Period of the guard timer that covers the native sampler's skipped sample after a reset. */
const GUARD_MS = 1;
const NS_PER_MS = 1e6;
const MS_PER_S = 1e3;
const US_PER_S = 1e6;

export class ProcessMetrics {
  private window: IntervalHistogram | undefined;
  /** The JS timer covering the sample the native histogram skips after a reset. */
  private guard: NodeJS.Timeout | undefined;
  /** Largest guard lateness in the current window (ms), or -1 when none ran. */
  private guardLateMs = -1;
  private lastCpuMicros = 0;

  constructor(
    registers: Registry[],
    private readonly resolutionMs = EVENT_LOOP_RESOLUTION_MS,
  ) {
    const self = this;
    new Gauge({
      name: 'cacheroute_event_loop_delay_seconds',
      help: 'How late the router event loop ran a timer, over the window since the previous scrape (quantile 1 = max). Every callback (decisions, body chunks) can wait this long.',
      labelNames: ['quantile'],
      registers,
      collect() {
        this.reset();
        const w = self.takeWindow();
        if (!w) return;
        for (const q of EVENT_LOOP_QUANTILES) this.set({ quantile: q }, w[q]);
      },
    });
    new Counter({
      name: 'cacheroute_process_cpu_seconds_total',
      help: 'User and system CPU time of the router process.',
      registers,
      collect() {
        const now = process.cpuUsage();
        const micros = now.user + now.system;
        if (micros > self.lastCpuMicros) this.inc((micros - self.lastCpuMicros) / US_PER_S);
        self.lastCpuMicros = micros;
      },
    });
    new Gauge({
      name: 'cacheroute_process_resident_memory_bytes',
      help: 'Resident set size of the router process.',
      registers,
      collect() {
        this.set(process.memoryUsage.rss());
      },
    });
  }

  start(): void {
    if (this.window) return;
    this.window = monitorEventLoopDelay({ resolution: this.resolutionMs });
    this.window.enable();
    this.guardLateMs = -1;
  }

  stop(): void {
    this.window?.disable();
    this.window = undefined;
    if (this.guard) clearTimeout(this.guard);
    this.guard = undefined;
  }

  /** Samples every GUARD_MS until the native histogram records again (see the header). */
  private armGuard(): void {
    if (this.guard) clearTimeout(this.guard);
    const dueMs = performance.now() + GUARD_MS;
    this.guard = setTimeout(() => {
      this.guard = undefined;
      this.guardLateMs = Math.max(this.guardLateMs, performance.now() - dueMs);
      if (this.window !== undefined && this.window.count === 0) this.armGuard();
    }, GUARD_MS);
    this.guard.unref();
  }

  /** Delay quantiles in seconds since the last call, or undefined (stopped, or no sample yet). */
  private takeWindow(): Record<(typeof EVENT_LOOP_QUANTILES)[number], number> | undefined {
    const h = this.window;
    if (!h) return undefined;
    const guard = this.guardLateMs;
    if (h.count === 0 && guard < 0) return undefined;
    // Native samples are the time between two runs: resolution + delay.
    const delay = (ns: number): number => Math.max(0, ns / NS_PER_MS - this.resolutionMs) / MS_PER_S;
    const guardS = Math.max(0, guard) / MS_PER_S;
    let out: Record<(typeof EVENT_LOOP_QUANTILES)[number], number>;
    if (h.count === 0) {
      out = { '0.5': guardS, '0.99': guardS, '1': guardS };
    } else {
      const max = Math.max(delay(h.max), guardS);
      // With the guard as one more sample: among at most 100 samples the p99 is the largest.
      const p99 = guard >= 0 && h.count < 100 ? max : delay(h.percentile(99));
      out = { '0.5': delay(h.percentile(50)), '0.99': p99, '1': max };
    }
    h.reset();
    this.guardLateMs = -1;
    this.armGuard();
    return out;
  }
}
