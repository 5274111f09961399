/** ProcessMetrics: event-loop delay windows, CPU counter, memory gauge, start/stop. */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { ProcessMetrics } from '../../../src/telemetry/process-metrics.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function block(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy: the event loop cannot run the sampler's timer
  }
}

async function values(registry: Registry, name: string): Promise<Map<string, number>> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const out = new Map<string, number>();
  for (const v of (m?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>) {
    out.set(String(v.labels['quantile'] ?? ''), v.value);
  }
  return out;
}

describe('telemetry: process metrics', () => {
  let pm: ProcessMetrics | undefined;
  afterEach(() => pm?.stop());

  it('reports a blocked event loop in the window that saw it, then starts a fresh window', async () => {
    const registry = new Registry();
    pm = new ProcessMetrics([registry]);
    pm.start();
    await sleep(60);
    await values(registry, 'cacheroute_event_loop_delay_seconds'); // closes the idle window
    // Blocked far longer than a busy shared machine pre-empts a process (tens of ms), so the
    // thresholds below tell the blocked window from the next one under load too.
    block(300);
    await sleep(40); // the late timer records its sample
    const busy = await values(registry, 'cacheroute_event_loop_delay_seconds');
    expect(busy.get('1'), 'max').to.be.within(0.25, 2);
    expect(busy.get('0.99'), 'p99').to.be.at.least(0.25);
    expect(busy.get('0.5')!, 'p50').to.be.at.most(busy.get('1')!);
    await sleep(60);
    const idle = await values(registry, 'cacheroute_event_loop_delay_seconds');
    expect(idle.get('1'), 'the blocked sample belongs to the previous window').to.be.below(0.25);
  });

  it('reports a window only a few ms long (two scrapers right after each other)', async () => {
    const registry = new Registry();
    pm = new ProcessMetrics([registry]);
    pm.start();
    await sleep(40);
    expect((await values(registry, 'cacheroute_event_loop_delay_seconds')).size).to.equal(3);
    await sleep(5);
    const short = await values(registry, 'cacheroute_event_loop_delay_seconds');
    expect(short.size, 'the guard sampled the gap the native histogram skips').to.equal(3);
    expect(short.get('1')!, 'no stall seen in a window without one (pre-emption aside)').to.be.below(0.25);
  });

  it('exports no delay while stopped, and stop/start are idempotent', async () => {
    const registry = new Registry();
    pm = new ProcessMetrics([registry]);
    expect((await values(registry, 'cacheroute_event_loop_delay_seconds')).size).to.equal(0);
    pm.start();
    pm.start();
    await sleep(40);
    expect((await values(registry, 'cacheroute_event_loop_delay_seconds')).size).to.equal(3);
    pm.stop();
    pm.stop();
    expect((await values(registry, 'cacheroute_event_loop_delay_seconds')).size).to.equal(0);
  });

  it('counts CPU seconds monotonically and reports resident memory', async () => {
    const registry = new Registry();
    pm = new ProcessMetrics([registry]);
    const cpu0 = (await values(registry, 'cacheroute_process_cpu_seconds_total')).get('') ?? 0;
    const start = process.cpuUsage();
    while (process.cpuUsage(start).user < 50_000) {
      // spend 50 ms of CPU (not wall clock: the machine may be busy)
    }
    const cpu1 = (await values(registry, 'cacheroute_process_cpu_seconds_total')).get('') ?? 0;
    expect(cpu1 - cpu0).to.be.at.least(0.05);
    const rss = (await values(registry, 'cacheroute_process_resident_memory_bytes')).get('') ?? 0;
    expect(rss).to.be.greaterThan(10 * 1024 * 1024);
  });
});
