import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { portable, portableString, writeJsonRuns } from '../../../../bench/report/result-files.js';
import { writeResults } from '../../../../bench/report/write-results.js';
import { TINY } from '../../../../bench/presets/tiny.js';
import type { PresetSpec } from '../../../../bench/presets/types.js';

/** An absolute path under a folder that holds machines' files. */
const MACHINE_PATH = /(^|[\s=:"'(,])\/(tmp|work|home|root|Users|var|opt|mnt|private|srv)\//;

describe('bench/report/result-files: committed results name no machine paths', () => {
  const root = '/work/wt/some-checkout';

  it('writes paths under the repository relative to it and other machine paths as <outside-repo>/<name>', () => {
    expect(portableString(`${root}/.run/vllm/models/tiny-llama`, root)).to.equal('.run/vllm/models/tiny-llama');
    expect(portableString(root, root)).to.equal('.');
    expect(portableString('/tmp/run-seed2', root)).to.equal('<outside-repo>/run-seed2');
    expect(portableString('--out=/tmp/spin/split-results/', root)).to.equal('--out=<outside-repo>/split-results');
    expect(portableString('checkout /work/wt/mainbuild (main)', root)).to.equal('checkout <outside-repo>/mainbuild (main)');
    expect(portableString(`${homedir()}/.cache/cacheroute/x`, root)).to.equal('<outside-repo>/x');
  });

  it('leaves URL paths, result ids and relative paths alone', () => {
    for (const s of [
      '/admin/freeze-metrics',
      '/v1/chat/completions',
      'sharing-sweep/sharing-0/cacheroute-round-robin',
      'bench/results/peers',
    ])
      expect(portableString(s, root)).to.equal(s);
  });

  it('rewrites strings at any depth, keys included', () => {
    expect(portable({ a: ['/tmp/x', { [`${root}/k`]: `${root}/v`, n: 3, b: null }] }, root)).to.deep.equal({
      a: ['<outside-repo>/x', { k: 'v', n: 3, b: null }],
    });
  });

  it('writes one row per line that JSON.parse reads back', () => {
    const dir = mkdtempSync(join(tmpdir(), 'result-files-'));
    try {
      const file = join(dir, 'r.json');
      writeJsonRuns(file, { preset: 'p', seed: 1 }, 'runs', [{ id: 'a', dir: '/tmp/q' }, { id: 'b' }], root);
      const text = readFileSync(file, 'utf8');
      expect(text.split('\n')).to.have.length(9);
      expect(JSON.parse(text)).to.deep.equal({ preset: 'p', seed: 1, runs: [{ id: 'a', dir: '<outside-repo>/q' }, { id: 'b' }] });
      writeJsonRuns(file, { preset: 'p' }, 'runs', [], root);
      expect(JSON.parse(readFileSync(file, 'utf8'))).to.deep.equal({ preset: 'p', runs: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writeResults keeps a run from another checkout and an --out outside it out of run.json, results.json and results.md', () => {
    const dir = mkdtempSync(join(tmpdir(), 'result-files-run-'));
    try {
      const preset: PresetSpec = {
        ...TINY,
        blocks: TINY.blocks.map((b) => ({ ...b, engines: { ...b.engines, rationale: `tokenizer at ${REPO_ROOT}/.run/vllm/models/tiny` } })),
      };
      writeResults({
        outDir: dir,
        preset,
        seed: 1,
        results: [],
        info: {
          gitCommit: null,
          gitDirty: [],
          node: process.version,
          envoy: null,
          sglangRouter: null,
          vllmRouter: null,
          cpus: 1,
          cpuModel: 'x',
          memGiB: 1,
          loadAvgAtStart: [],
        },
        startedAt: '',
        finishedAt: '',
        partial: false,
        command: ['--preset', 'tiny', '--out', dir],
        repoRoot: REPO_ROOT,
      });
      for (const f of ['run.json', 'results.json', 'results.md']) {
        const text = readFileSync(join(dir, f), 'utf8');
        expect(text, f).not.to.match(MACHINE_PATH);
        expect(text, f).not.to.contain(REPO_ROOT);
      }
      const run = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { command: string[]; preset: PresetSpec };
      expect(run.command.at(-1)).to.match(/^<outside-repo>\/result-files-run-/);
      expect(run.preset.blocks[0]?.engines.rationale).to.equal('tokenizer at .run/vllm/models/tiny');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no committed run.json or results.json under bench/results holds a machine path', () => {
    const files = execFileSync('git', ['ls-files', 'bench/results'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.json'));
    expect(files.length).to.be.greaterThan(5);
    const offenders = files.filter((f) => MACHINE_PATH.test(readFileSync(join(REPO_ROOT, f), 'utf8')));
    expect(offenders).to.deep.equal([]);
  });
});
