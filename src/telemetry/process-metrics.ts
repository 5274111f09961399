/**
 * The router process's own health: event-loop delay, CPU time and resident memory.
 *
 * Why: a Node router adds latency mostly by making callbacks wait behind each other — a
 * decision, a body chunk to echo and a metrics scrape all share one thread — so the
 * event-loop delay is the direct measure of "near-zero added latency" under load, and CPU
 * seconds per request is what sizing needs. An unref'd timer every `resolutionMs` records
 * how late it fired into a perf_hooks histogram; each scrape reads p50 / p99 / max of the
 * samples since the previous scrape and starts a new window (the windowing of prom-client's
 * nodejs_eventloop_lag_* gauges, so two scrapers share windows). Not monitorEventLoopDelay:
 * resetting it drops the next sample, so a stall right after a scrape went unseen.
 *
 * Lifecycle: start() enables the sampler, stop() disables it (idempotent both); while
 * stopped the delay gauges export nothing.
 */
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';
import { Counter, Gauge, type Registry } from 'prom-client';

/** Sampling period of the delay monitor (prom-client's default precision). */
export const EVENT_LOOP_RESOLUTION_MS = 10;

/** `quantile` label values: median, 99th percentile and the maximum ("1"). */
export const EVENT_LOOP_QUANTILES = ['0.5', '0.99', '1'] as const;

const NS_PER_S = 1e9;
const US_PER_S = 1e6;

export class ProcessMetrics {
  private readonly window: RecordableHistogram = createHistogram();
  private timer: NodeJS.Timeout | undefined;
  private lastTickMs = 0;
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
    if (this.timer) return;
    this.window.reset();
    this.lastTickMs = performance.now();
    this.timer = setInterval(this.tick, this.resolutionMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private readonly tick = (): void => {
    const now = performance.now();
    const lateNs = Math.round((now - this.lastTickMs - this.resolutionMs) * 1e6);
    this.lastTickMs = now;
    this.window.record(Math.max(1, lateNs)); // the histogram takes integers >= 1
  };

  /** Delay quantiles in seconds since the last call, or undefined (stopped, or no sample yet). */
  private takeWindow(): Record<(typeof EVENT_LOOP_QUANTILES)[number], number> | undefined {
    const h = this.window;
    if (!this.timer || h.count === 0) return undefined;
    const out = { '0.5': h.percentile(50) / NS_PER_S, '0.99': h.percentile(99) / NS_PER_S, '1': h.max / NS_PER_S };
    h.reset();
    return out;
  }
}
