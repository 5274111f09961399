import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../../bench/harness/repo-paths.js';
import { rerenderResults } from '../../../../bench/report/rerender.js';
import { rawDirFor } from '../../../../bench/report/write-results.js';

const COMMITTED = join(REPO_ROOT, 'bench', 'results', 'peers-hot');

describe('bench report: re-rendering from what is committed', () => {
  let dir = '';
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('rebuilds results.md and every chart from results.json and run.json alone (no records)', () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-rerender-'));
    for (const f of ['results.json', 'run.json']) copyFileSync(join(COMMITTED, f), join(dir, f));
    const runs = rerenderResults(dir);
    const { runs: expected } = JSON.parse(readFileSync(join(COMMITTED, 'results.json'), 'utf8')) as { runs: { contender: { label: string } }[] };
    expect(runs).to.equal(expected.length).and.to.be.greaterThan(0);
    const svgs = (d: string): string[] => readdirSync(d).filter((f) => f.endsWith('.svg')).sort();
    expect(svgs(dir)).to.deep.equal(svgs(COMMITTED)).and.to.have.length.greaterThan(0);
    const md = readFileSync(join(dir, 'results.md'), 'utf8');
    for (const r of expected) expect(md, r.contender.label).to.contain(`| ${r.contender.label} |`);
    // Derived from the committed files only: rendering again gives the same bytes.
    rerenderResults(dir);
    expect(readFileSync(join(dir, 'results.md'), 'utf8')).to.equal(md);
  });

  it('git tracks no per-request records under bench/results', () => {
    const tracked = execFileSync('git', ['ls-files', 'bench/results'], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\n').filter((f) => f !== '');
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
