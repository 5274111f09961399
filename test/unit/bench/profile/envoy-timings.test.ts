import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { envoyTimings, parseLogName, readAccessLog } from '../../../../bench/profile/envoy-timings.js';

const entry = (path: string, routing: number | string | null, firstByte: number | string | null): string =>
  JSON.stringify({ method: 'POST', path, routing_us: routing, upstream_first_byte_us: firstByte, status: 200 });

describe('bench/profile/envoy-timings', () => {
  it("reads the /v1 entries of an access log and skips Envoy's own log lines, other paths and absent fields", () => {
    const text = [
      '[2026-12-02 00:00:00.000][1][info][main] starting main dispatch loop',
      entry('/v1/completions', 2100, 9000),
      entry('/health', 50, 100),
      entry('/v1/chat/completions', '-', null),
      '{"not json',
      entry('/v1/completions', 1900, 8000),
    ].join('\n');
    expect(readAccessLog(text)).to.deep.equal({ routing: [2100, 1900], firstByte: [9000, 8000] });
  });

  it("names a log's contender and block from the harness's file names", () => {
    expect(parseLogName('envoy-cacheroute-cache-aware#1.log')).to.deep.equal({ label: 'cacheroute-cache-aware#1', block: 0 });
    expect(parseLogName('envoy-sglang-cache_aware-behind-null-hop#3-2.log')).to.deep.equal({
      label: 'sglang-cache_aware-behind-null-hop#3',
      block: 1,
    });
    expect(parseLogName('envoy-x-1234.yaml')).to.equal(undefined);
  });

  it('summarises every Envoy of a run directory per block, and refuses a block it was not told about', () => {
    const dir = mkdtempSync(join(tmpdir(), 'envoy-timings-'));
    try {
      writeFileSync(join(dir, 'envoy-a#1.log'), [1000, 2000, 3000].map((r) => entry('/v1/completions', r, r * 4)).join('\n'));
      writeFileSync(join(dir, 'envoy-a#1-2.log'), [500, 700].map((r) => entry('/v1/completions', r, 10)).join('\n'));
      writeFileSync(join(dir, 'envoy-a#1-148601.yaml'), 'ignored');
      const runs = envoyTimings(dir, ['shared-prefix', 'agentic']);
      expect(runs.map((r) => [r.block, r.contender, r.requests, r.routing_us_p50, r.upstream_first_byte_us_p50])).to.deep.equal([
        ['shared-prefix', 'a#1', 3, 2000, 8000],
        ['agentic', 'a#1', 2, 600, 10],
      ]);
      expect(() => envoyTimings(dir, ['shared-prefix'])).to.throw(/block 2/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
