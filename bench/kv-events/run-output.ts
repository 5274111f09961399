/** Prints a run's summary and, with `--out DIR`, commits-ready files: DIR/run.json and DIR/results.md. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { portableString, writeJson } from '../report/result-files.js';

export function emitRun(out: string | undefined, result: unknown, md: string): void {
  process.stdout.write(md);
  if (out === undefined) return;
  mkdirSync(out, { recursive: true });
  writeJson(join(out, 'run.json'), result, REPO_ROOT);
  writeFileSync(join(out, 'results.md'), portableString(md, REPO_ROOT));
}
