/**
 * How committed result files (run.json, results.json and the tools' own JSON) are written.
 *
 * They must not name this machine: a run made in another checkout, or with `--out /tmp/x`,
 * would otherwise commit `/work/...` or `/tmp/...` and the file would say nothing useful to
 * a reader elsewhere. Every string is rewritten before writing: a path under the repository
 * becomes relative to it, any other absolute path under a machine root (home, temp, the usual
 * top-level folders) becomes `<outside-repo>/<last segment>`. URL paths such as
 * `/admin/reset` are left alone: only the listed roots count as machine paths.
 *
 * Aggregates are written one run per line (`writeJsonRuns`): the committed results stay
 * short while a diff still says which run changed.
 */
import { homedir, tmpdir } from 'node:os';
import { writeFileSync } from 'node:fs';
import { basename, relative } from 'node:path';

/** Top-level folders that hold machines' files, never URL paths the harness sends. */
const MACHINE_ROOTS = ['/tmp/', '/work/', '/home/', '/root/', '/Users/', '/var/', '/opt/', '/mnt/', '/private/', '/srv/'];

const regexQuote = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The rewriting of one string, for a repository at `repoRoot`. */
export function portableString(text: string, repoRoot: string, extraRoots: readonly string[] = []): string {
  const root = repoRoot.replace(/\/+$/, '');
  const roots = [...new Set([`${root}/`, `${homedir()}/`, `${tmpdir()}/`, ...MACHINE_ROOTS, ...extraRoots])].filter((r) => r.length > 2);
  // A path starts at the beginning of the string or after a separator, and runs to a delimiter.
  const pattern = new RegExp(`(^|[\\s=:"'(,])((?:${roots.map(regexQuote).join('|')})[^\\s"',)]*|${regexQuote(root)}(?=$|[\\s"',)]))`, 'g');
  return text.replace(pattern, (_m, lead: string, path: string) => {
    const trimmed = path.replace(/\/+$/, '');
    if (trimmed === root || trimmed.startsWith(`${root}/`)) return lead + (relative(root, trimmed) || '.');
    return `${lead}<outside-repo>/${basename(trimmed)}`;
  });
}

/** A deep copy of `value` with every string made portable (keys too). */
export function portable<T>(value: T, repoRoot: string): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return portableString(v, repoRoot);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [portableString(k, repoRoot), walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** Writes `value` as indented JSON with no machine paths. */
export function writeJson(file: string, value: unknown, repoRoot: string): void {
  writeFileSync(file, `${JSON.stringify(portable(value, repoRoot), null, 1)}\n`);
}

/**
 * Writes `{ ...head, [key]: rows }` with the head's fields indented as usual and each row on
 * one line, with no machine paths. JSON.parse reads it like any other JSON.
 */
export function writeJsonRuns(file: string, head: Record<string, unknown>, key: string, rows: readonly unknown[], repoRoot: string): void {
  const fields = Object.entries(portable(head, repoRoot)).map(([k, v]) => ` ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const lines = portable(rows, repoRoot).map((r) => `  ${JSON.stringify(r)}`);
  const body = lines.length === 0 ? '[]' : `[\n${lines.join(',\n')}\n ]`;
  writeFileSync(file, `{\n${[...fields, ` ${JSON.stringify(key)}: ${body}`].join(',\n')}\n}\n`);
}
