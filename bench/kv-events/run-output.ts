/** Prints a run's summary and, with `--out DIR`, commits-ready files: DIR/run.json and DIR/results.md. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function emitRun(out: string | undefined, result: unknown, md: string): void {
  process.stdout.write(md);
  if (out === undefined) return;
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'run.json'), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(join(out, 'results.md'), md);
}
