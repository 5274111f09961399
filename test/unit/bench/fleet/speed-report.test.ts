import { expect } from 'chai';
import { SPEED_BAR_PER_WALL_MINUTE, speedReport } from '../../../../bench/fleet/studies.js';
import type { StudyRow } from '../../../../bench/fleet/study.js';
import type { SimSummary } from '../../../../src/simulate/summary.js';

function row(cell: string, wallMs: number, cpuMs: number): StudyRow {
  const requests = 100_000;
  const summary = {
    requests,
    virtualMs: 195_833,
    wallMs,
    cpuMs,
    requestsPerWallMinute: (requests / wallMs) * 60_000,
    requestsPerCpuMinute: (requests / cpuMs) * 60_000,
    callbacks: 3_361_689,
    heapUsedMiB: 885.2,
  } as SimSummary;
  return { group: 'speed', cell, contender: 'cacheroute:cache-aware', source: 'test', engines: 256, summary };
}

describe('bench/fleet speed study report', () => {
  it('tables both throughputs and misses the bar only on the wall figure below 100,000 a minute', () => {
    expect(SPEED_BAR_PER_WALL_MINUTE).to.equal(100_000);
    const r = speedReport([row('quiet', 40_000, 35_000), row('loaded', 353_705, 110_605)]);
    expect(r.sections.find((l) => l.startsWith('| quiet'))).to.equal(
      '| quiet | 100,000 | 195.8 | 40.0 | 35.0 | 150,000 | 171,429 | 3,361,689 | 885 | met |',
    );
    expect(r.sections.find((l) => l.startsWith('| loaded'))).to.match(/\| 16,963 \| 54,247 \| .* \| MISSED \|$/);
    expect(r.misses).to.deep.equal(['speed / loaded: 16,963 requests per wall minute (bar 100,000; 54,247 per CPU minute)']);
  });
});
