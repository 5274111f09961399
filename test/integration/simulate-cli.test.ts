/**
 * `cacheroute simulate` as a child process on a small trace written here: the table and
 * JSON come out, runs are deterministic, the ranking follows the workload (on a trace where
 * groups of requests share long prefixes, cache-aware routing beats round-robin on hit
 * rate and TTFT), a router config joins the comparison, and bad input exits 2 with a reason.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ROUTER_MAIN } from '../kit/repo-paths.js';
import { formatTraceLine } from '../../src/traffic-trace/trace-format.js';
import type { SimulateResult } from '../../src/cli/simulate-command.js';
import { seededRng } from '../../src/util/rng.js';

const exec = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [ROUTER_MAIN, 'simulate', ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** 24 groups of 10 requests each: 16 shared blocks of 64 tokens per group, then 2 of its own; arrivals every 20 ms. */
function groupedTrace(): string {
  const rng = seededRng(3);
  const lines: string[] = [];
  let next = 24 * 16;
  for (let i = 0; i < 240; i++) {
    const g = rng.int(24);
    const ids = [...Array.from({ length: 16 }, (_, k) => g * 16 + k), next++, next++];
    lines.push(formatTraceLine({ atMs: i * 20, inputTokens: 18 * 64, outputTokens: 20, blockIds: ids, blockTokens: 64, model: 'm' }));
  }
  return lines.join('');
}

describe('cacheroute simulate (CLI)', function () {
  this.timeout(120_000);
  let dir: string;
  let trace: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'simulate-cli-'));
    trace = join(dir, 'trace.jsonl');
    writeFileSync(trace, groupedTrace());
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('ranks cache-aware above round-robin on a prefix-sharing trace, the same way every run', async () => {
    const args = ['--trace', trace, '--engines', '4', '--strategies', 'round-robin,cache-aware', '--json'];
    const [a, b] = [await cli(args), await cli(args)];
    expect(a.code, a.stderr).to.equal(0);
    const r = JSON.parse(a.stdout) as SimulateResult;
    const strip = (s: string): unknown =>
      (JSON.parse(s) as SimulateResult).rows.map(({ label, hitRate, ttftP50Ms, ttftP99Ms, busiestShare }) => [
        label,
        hitRate,
        ttftP50Ms,
        ttftP99Ms,
        busiestShare,
      ]);
    expect(strip(b.stdout)).to.deep.equal(strip(a.stdout));
    expect(r.trace).to.deep.include({ requests: 240, replayed: 240 });
    const [best, other] = r.rows;
    expect(best!.label).to.equal('cache-aware');
    expect(other!.label).to.equal('round-robin');
    expect(best!.hitRate).to.be.above(other!.hitRate + 0.2);
    expect(best!.ttftP50Ms).to.be.below(other!.ttftP50Ms);
    expect(r.recommendation).to.match(/^use cache-aware/);
    expect(r.recommendation, 'no TTFT model, no slots hint').to.not.contain('maxNumSeqs');
    expect(a.stderr).to.contain('cache-aware: 240 requests');
  });

  it("recommending a TTFT preset, says the engines' slots it was simulated with and how to set them", async () => {
    const r = await cli(['--trace', trace, '--engines', '4', '--strategies', 'round-robin,predicted-ttft', '--json']);
    expect(r.code, r.stderr).to.equal(0);
    const res = JSON.parse(r.stdout) as SimulateResult;
    expect(res.rows[0]!.label).to.equal('predicted-ttft');
    expect(res.recommendation).to.contain('ttft-model.maxNumSeqs 64 (the gpu-like engines');
  });

  it('prints the table with a recommendation, and replays a router config beside the presets', async () => {
    const config = join(dir, 'router.yaml');
    writeFileSync(
      config,
      'apiVersion: cacheroute/v1\nstrategy: prefix-hash\nendpoints: ["127.0.0.1:8001"]\ntrafficTrace: { path: /nonexistent/never-written.jsonl }\n',
    );
    const r = await cli(['--trace', trace, '--engines', '3', '--strategies', 'round-robin', '--config', config]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/strategy\s+hit rate\s+TTFT p50 ms\s+TTFT p99 ms\s+busiest share\s+failed/);
    expect(r.stdout).to.contain('config: prefix-hash').and.contain('round-robin').and.contain('recommendation: use ');
    expect(r.stdout).to.contain('3 engines (gpu-like)').and.contain('even spread: 0.333');
  });

  it('exits 2 naming the line of a malformed trace, and 64 on bad arguments', async () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, `${groupedTrace().split('\n')[0]}\n{"timestamp": "soon"}\n`);
    const r = await cli(['--trace', bad, '--engines', '2']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.contain('BAD_CONFIG').and.contain('bad.jsonl line 2');
    const missing = await cli(['--trace', join(dir, 'absent.jsonl'), '--engines', '2']);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.contain('cannot read trace');
    const usage = await cli(['--trace', trace]);
    expect(usage.code).to.equal(64);
    expect(usage.stderr).to.contain('missing --engines');
  });
});
