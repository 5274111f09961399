/**
 * Layer boundaries, checked on the import statements of src/: the scheduling framework
 * knows no plugin and no config, plugins never read the router's config, only
 * src/logging/ knows the logging library, and telemetry has no logger of its own.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '../kit/repo-paths.js';

const SRC = join(REPO_ROOT, 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Module specifiers imported by a file (static imports and re-exports). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+'([^']+)'/gms)].map((m) => m[1]!);
}

function violations(under: string, bad: (spec: string) => boolean): string[] {
  return files(join(SRC, under)).flatMap((f) =>
    importsOf(f)
      .filter(bad)
      .map((s) => `${relative(SRC, f)} imports ${s}`),
  );
}

describe('layer boundaries (imports in src/)', () => {
  it('finds the imports it checks (the scan itself works)', () => {
    expect(importsOf(join(SRC, 'scheduling', 'scheduler.ts'))).to.include('./plugin-graph.js');
  });

  it('src/scheduling/ imports neither src/plugins/ nor src/config/', () => {
    expect(violations('scheduling', (s) => s.includes('/plugins/') || s.includes('/config/'))).to.deep.equal([]);
  });

  it('plugins never read the router config (only config section helpers for the shorthand)', () => {
    const bad = violations('plugins', (s) => s.includes('/config/') && !s.endsWith('/config/config-section.js'));
    expect(bad).to.deep.equal([]);
  });

  it('only src/logging/ imports pino, and telemetry has no logger module', () => {
    const all = files(SRC).flatMap((f) =>
      importsOf(f)
        .filter((s) => s === 'pino')
        .map(() => relative(SRC, f)),
    );
    expect(all).to.deep.equal([join('logging', 'logger.ts')]);
    expect(files(join(SRC, 'telemetry')).map((f) => relative(SRC, f))).to.not.include(join('telemetry', 'logger.ts'));
  });

  it('the data layer does not import plugins', () => {
    expect(violations('datalayer', (s) => s.includes('/plugins/'))).to.deep.equal([]);
  });
});
