/**
 * The group-level hotspot trigger through createScheduler (cache-aware, config defaults):
 * evenly spread warm groups on busy engines must not replicate (the `peers` cascade), a hot
 * group still must. The control with both gates at 0 (the old engine-load trigger) shows the
 * even workload is busy enough to have replicated.
 */
import { expect } from 'chai';
import { defaultConfig } from '../../../../src/config/default-config.js';
import type { RouteTicket } from '../../../../src/core/routing-service.js';
import type { RouteRequest } from '../../../../src/core/types.js';
import type { HotspotStats } from '../../../../src/plugins/filter/hotspot-replication.js';
import { createScheduler } from '../../../../src/compose/create-scheduler.js';
import { ManualClock } from '../../../../src/util/clock.js';
import { seededRng } from '../../../../src/util/rng.js';

let seq = 0;
function req(prefix: string): RouteRequest {
  return {
    requestId: `g${++seq}`,
    model: 'm',
    prefix,
    promptChars: prefix.length,
    promptTokens: Math.ceil(prefix.length / 4),
    stream: false,
    arrivalMs: 0,
  };
}

const GROUPS = Array.from({ length: 48 }, (_, g) => `system prompt of group ${g}; `.repeat(48));

/**
 * 4 engines; every group warmed once; then one request every 50 ms (20 req/s) for 30 s, each
 * lasting 1.6 s (≈ 8 in flight per engine, above high water 6). `hotShare` of the arrivals go
 * to group 0, the rest uniformly to the 48 groups.
 */
function run(hotspot: Record<string, number>, hotShare: number): HotspotStats | undefined {
  const clock = new ManualClock(0);
  const cfg = defaultConfig({
    endpoints: Array.from({ length: 4 }, (_, i) => ({ address: `127.0.0.1:${9101 + i}` })),
    strategy: { name: 'cache-aware', plugins: { 'hotspot-replication-filter': hotspot } },
  });
  const s = createScheduler(cfg, { clock, rng: seededRng(7) });
  const rng = seededRng(8);
  for (const g of GROUPS) {
    s.route(req(g)).finish({ aborted: false });
    clock.advance(10);
  }
  const open: { t: RouteTicket; endMs: number }[] = [];
  for (let i = 0; i < 600; i++) {
    clock.advance(50);
    while (open.length > 0 && open[0]!.endMs <= clock.nowMs()) open.shift()!.t.finish({ aborted: false });
    const g = rng.next() < hotShare ? 0 : rng.int(GROUPS.length);
    open.push({ t: s.route(req(GROUPS[g]!)), endMs: clock.nowMs() + 1600 });
  }
  return s.pluginStates().find((p) => p.type === 'hotspot-replication-filter')?.state as HotspotStats | undefined;
}

describe('plugins/filter hotspot group-level trigger through the scheduler', () => {
  it('evenly spread warm groups on busy engines: no growth (the engine-load trigger grows)', () => {
    expect(run({ minGroupShare: 0, minLoadRatio: 0 }, 0)?.grows, 'control').to.be.greaterThan(0);
    expect(run({}, 0)).to.include({ grows: 0, replicated: 0 });
  });

  it('one group bringing most of the traffic: it grows', () => {
    const h = run({}, 0.7);
    expect(h?.grows).to.be.greaterThan(0);
    expect(h?.largestSet).to.be.at.least(2);
  });
});
