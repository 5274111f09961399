/**
 * Rules the test tree and the benchmarks keep, checked on the sources: a skipped test must
 * go through require-component.ts (which fails under CI=true and prints why otherwise); the
 * test kit (test/kit/: start and talk to the real components) is what tests, the benchmarks
 * and the demo share, so tests do not import the benchmark harness and the kit imports
 * nothing from bench/.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../../kit/repo-paths.js';

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** `file:line: text` for every line of the files matching the pattern. */
function matches(files: readonly string[], pattern: RegExp): string[] {
  const hits: string[] = [];
  for (const f of files) {
    readFileSync(f, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (pattern.test(line)) hits.push(`${relative(REPO_ROOT, f)}:${i + 1}: ${line.trim()}`);
      });
  }
  return hits;
}

describe('test tree rules', () => {
  it('no test skips on its own: skips go through test/kit/require-component.ts', () => {
    const files = tsFiles(join(REPO_ROOT, 'test')).filter(
      (f) => !f.endsWith(join('kit', 'require-component.ts')) && !f.endsWith('test-tree-rules.test.ts'),
    );
    expect(files.length).to.be.greaterThan(10);
    expect(matches(files, /\bthis\.skip\(|\b(it|describe|context)\.skip\(|\bx(it|describe)\(/)).to.deep.equal([]);
  });

  it('bench/ and scripts/ import from test/ only the kit', () => {
    const files = [...tsFiles(join(REPO_ROOT, 'bench')), ...tsFiles(join(REPO_ROOT, 'scripts'))];
    expect(files.length).to.be.greaterThan(10);
    expect(matches(files, /from\s+['"](\.\.\/)+test\/(?!kit\/)/)).to.deep.equal([]);
  });

  it('integration and end-to-end tests import from bench/ only the simulated engine they test', () => {
    const files = [...tsFiles(join(REPO_ROOT, 'test', 'integration')), ...tsFiles(join(REPO_ROOT, 'test', 'e2e'))];
    expect(files.length).to.be.greaterThan(10);
    const hits = matches(files, /from\s+['"](\.\.\/)+bench\//).filter((h) => !/bench\/sim-engine[/.]/.test(h));
    expect(hits).to.deep.equal([]);
  });

  it('the kit imports nothing from bench/', () => {
    const files = tsFiles(join(REPO_ROOT, 'test', 'kit'));
    expect(files.length).to.be.greaterThan(10);
    expect(matches(files, /from\s+['"](\.\.\/)+bench\//)).to.deep.equal([]);
  });
});
