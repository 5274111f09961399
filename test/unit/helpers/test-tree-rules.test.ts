/**
 * Rules the test tree and the benchmarks keep, checked on the sources: a skipped test must
 * go through require-component.ts (which fails under CI=true and prints why otherwise), and
 * bench/ never imports test/ (shared process helpers live in bench/harness/).
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../../../bench/harness/repo-paths.js';

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
  it('no test skips on its own: skips go through test/helpers/require-component.ts', () => {
    const files = tsFiles(join(REPO_ROOT, 'test')).filter(
      (f) => !f.endsWith(join('helpers', 'require-component.ts')) && !f.endsWith('test-tree-rules.test.ts'),
    );
    expect(files.length).to.be.greaterThan(10);
    expect(matches(files, /\bthis\.skip\(|\b(it|describe|context)\.skip\(|\bx(it|describe)\(/)).to.deep.equal([]);
  });

  it('bench/ imports nothing from test/', () => {
    const files = tsFiles(join(REPO_ROOT, 'bench'));
    expect(files.length).to.be.greaterThan(10);
    expect(matches(files, /from\s+['"](\.\.\/)+test\//)).to.deep.equal([]);
  });
});
