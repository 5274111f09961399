/**
 * Runs the `tiny` preset end to end (real Envoy, the compiled router, simulated engines),
 * writing to a temporary directory. Needs Envoy and the builds (require-component.ts).
 */
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPreset } from '../../../../bench/harness/run-preset.js';
import type { ExperimentResult } from '../../../../bench/harness/run-experiment.js';
import { TINY } from '../../../../bench/presets/tiny.js';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../../../kit/require-component.js';

describe('bench preset tiny (end to end)', function () {
  this.timeout(180_000);
  let outDir: string;

  before(function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    outDir = mkdtempSync(join(tmpdir(), 'bench-tiny-'));
  });

  after(() => {
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  it('runs every contender, accounts every request and writes the report', async () => {
    const results = await runPreset({ preset: TINY, outDir, repoRoot: REPO_ROOT, log: () => {}, command: ['test'] });
    expect(results).to.have.length(6);
    for (const r of results) {
      expect(r.error, r.id).to.equal(null);
      expect(r.summary.success.requests, r.id).to.equal(16);
      expect(r.summary.success.successRate, r.id).to.equal(1);
      expect(r.summary.spread.source, r.id).to.equal('engine-metrics');
      expect(r.summary.hits.engineTokenHitRate, r.id).to.be.within(0, 1);
      expect(r.summary.ttftMs.p50, r.id).to.be.greaterThan(0);
    }
    const hit = (label: string, qps: number): number =>
      (results.find((r) => r.contender.label === label && r.qps === qps) as ExperimentResult).summary.hits.requestHitRate as number;
    for (const q of [4, 8]) expect(hit('cacheroute-cache-aware', q)).to.be.at.least(hit('cacheroute-round-robin', q));
    const ca = results.find((r) => r.contender.label === 'cacheroute-cache-aware');
    expect(ca?.routerDecision?.count).to.equal(16);

    const files = readdirSync(outDir);
    for (const f of ['results.md', 'results.json', 'run.json']) expect(files).to.include(f);
    expect(files.filter((f) => f.endsWith('.svg')).length).to.be.at.least(4);
    expect(files, 'per-request records stay out of the committed directory').to.not.include('records');
    const rawDir = join(outDir, 'raw');
    expect(readdirSync(rawDir)).to.have.length(6);
    const run = JSON.parse(readFileSync(join(outDir, 'run.json'), 'utf8')) as { seed: number; node: string; preset: { name: string } };
    expect(run.seed).to.equal(1);
    expect(run.preset.name).to.equal('tiny');
    expect(run.node).to.equal(process.version);
    const md = readFileSync(join(outDir, 'results.md'), 'utf8');
    expect(md).to.contain('| sharing-90 | 8 | cacheroute-cache-aware |');
    // records carry no prompt text
    const line = readFileSync(join(rawDir, readdirSync(rawDir)[0] as string), 'utf8').split('\n')[0] as string;
    expect(Object.keys(JSON.parse(line) as object)).to.not.include('prompt');
  });
});
