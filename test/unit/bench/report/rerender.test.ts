import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { poolRunDirs, rerenderResults } from '../../../../bench/report/rerender.js';
import { rawDirFor, recordsFileName } from '../../../../bench/report/write-results.js';

const COMMITTED = join(REPO_ROOT, 'bench', 'results', 'peers-hot');

describe('bench report: re-rendering from what is committed', () => {
  let dir = '';
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('rebuilds results.md and every chart from results.json and run.json alone (no records)', () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-rerender-'));
    for (const f of ['results.json', 'run.json']) copyFileSync(join(COMMITTED, f), join(dir, f));
    const runs = rerenderResults(dir, REPO_ROOT);
    const { runs: expected } = JSON.parse(readFileSync(join(COMMITTED, 'results.json'), 'utf8')) as {
      runs: { contender: { label: string } }[];
    };
    expect(runs).to.equal(expected.length).and.to.be.greaterThan(0);
    const svgs = (d: string): string[] =>
      readdirSync(d)
        .filter((f) => f.endsWith('.svg'))
        .sort();
    expect(svgs(dir)).to.deep.equal(svgs(COMMITTED)).and.to.have.length.greaterThan(0);
    const md = readFileSync(join(dir, 'results.md'), 'utf8');
    for (const r of expected) expect(md, r.contender.label).to.contain(`| ${r.contender.label} |`);
    // Derived from the committed files only: rendering again gives the same bytes.
    rerenderResults(dir, REPO_ROOT);
    expect(readFileSync(join(dir, 'results.md'), 'utf8')).to.equal(md);
  });

  it('git tracks no per-request records under bench/results', () => {
    const tracked = execFileSync('git', ['ls-files', 'bench/results'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f !== '');
    expect(tracked.length, 'the committed summaries are there').to.be.greaterThan(0);
    expect(tracked.filter((f) => f.endsWith('.jsonl') || f.includes('/records/') || f.startsWith('bench/results/raw/'))).to.deep.equal([]);
  });

  it('sends records under bench/results to the ignored raw/ tree, and elsewhere next to the output', () => {
    expect(rawDirFor('/r/bench/results/peers', '/r')).to.equal('/r/bench/results/raw/peers');
    expect(rawDirFor('/r/bench/results/peers/seed-2', '/r')).to.equal('/r/bench/results/raw/peers/seed-2');
    expect(rawDirFor('/tmp/st2', '/r')).to.equal('/tmp/st2/raw');
    expect(rawDirFor('/r/bench/results', '/r')).to.equal('/r/bench/results/raw');
  });
});

describe('bench report: pooling the rounds of several runs', () => {
  let root = '';
  afterEach(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** A run directory (outside bench/results, so records sit in <dir>/raw) with two rounds of `cr` and `sg`. */
  function runDir(name: string, seed: number, ttft: Record<string, readonly number[]>): string {
    const dir = join(root, name);
    mkdirSync(join(dir, 'raw'), { recursive: true });
    const runs = Object.keys(ttft).map((label) => ({
      id: `b/s@1.5/${label}`,
      block: 'b',
      scenario: { label: 's' },
      qps: 1.5,
      contender: { label, kind: label.startsWith('cr') ? 'cacheroute' : 'sglang-router' },
      summary: { hits: { engineTokenHitRate: 0.5 } },
    }));
    writeFileSync(join(dir, 'results.json'), JSON.stringify({ runs }));
    writeFileSync(join(dir, 'run.json'), JSON.stringify({ preset: { name: 'p' }, seed, gitCommit: 'abc' }));
    for (const r of runs) {
      const lines = (ttft[r.contender.label] ?? []).map((t, i) =>
        JSON.stringify({ id: `q${i}`, outcome: 'ok', ttftMs: t, cachedTokens: 0, scheduledMs: i * 1000, endMs: i * 1000 + 200 }),
      );
      writeFileSync(join(dir, 'raw', recordsFileName(r.id)), lines.join('\n') + '\n');
    }
    return dir;
  }

  it("numbers the second run's rounds after the first's and pools every request", () => {
    root = mkdtempSync(join(tmpdir(), 'bench-pool-'));
    const a = runDir('a', 1, { 'cr#1': [100, 100], 'sg#1': [50, 50], 'cr#2': [100, 100], 'sg#2': [50, 50] });
    const b = runDir('b', 5, { 'cr#1': [60, 60], 'sg#1': [60, 60], 'cr#2': [60, 60], 'sg#2': [60, 60] });
    const out = join(root, 'pooled');
    expect(poolRunDirs([a, b], out, REPO_ROOT)).to.equal(4);
    const { groups } = JSON.parse(readFileSync(join(out, 'rounds.json'), 'utf8')) as {
      groups: { contenders: { contender: string; rounds: number; requests: number }[]; comparisons: { perRoundRatios: number[] }[] }[];
    };
    const cr = groups[0]!.contenders.find((c) => c.contender === 'cr')!;
    expect([cr.rounds, cr.requests]).to.deep.equal([4, 8]);
    // Round n of a run is compared with round n of the same run: 2, 2, then 1, 1.
    expect(groups[0]!.comparisons[0]!.perRoundRatios).to.deep.equal([2, 2, 1, 1]);
    const pool = JSON.parse(readFileSync(join(out, 'pool.json'), 'utf8')) as { pooled: { dir: string; seed: number; rounds: number }[] };
    expect(pool.pooled.map((p) => [p.dir, p.seed, p.rounds])).to.deep.equal([
      ['../a', 1, 2],
      ['../b', 5, 2],
    ]);
  });

  it('refuses runs whose records are gone, or of another preset', () => {
    root = mkdtempSync(join(tmpdir(), 'bench-pool-'));
    const a = runDir('a', 1, { 'cr#1': [1], 'sg#1': [1], 'cr#2': [1], 'sg#2': [1] });
    const b = runDir('b', 5, { 'cr#1': [1], 'sg#1': [1], 'cr#2': [1], 'sg#2': [1] });
    writeFileSync(join(b, 'run.json'), JSON.stringify({ preset: { name: 'other' }, seed: 5, gitCommit: 'abc' }));
    expect(() => poolRunDirs([a, b], join(root, 'o'), REPO_ROOT)).to.throw(/preset other, not p/);
    rmSync(join(a, 'raw'), { recursive: true });
    expect(() => poolRunDirs([a, b], join(root, 'o'), REPO_ROOT)).to.throw(/records .* are not on disk/);
    expect(() => poolRunDirs([a], join(root, 'o'), REPO_ROOT)).to.throw(/at least two/);
  });
});
