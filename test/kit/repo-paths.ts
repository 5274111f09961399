/**
 * Locations inside the repository, independent of whether the code runs from the sources
 * or from dist/ (compiled files sit one level deeper under dist/).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRepoRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'envoy'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`repository root not found above ${start}`);
    dir = parent;
  }
}

/** Absolute path of the repository root (the directory holding package.json and envoy/). */
export const REPO_ROOT: string = findRepoRoot(dirname(fileURLToPath(import.meta.url)));

/** The Envoy binary installed by scripts/setup.sh (override with ENVOY_BIN). */
export const ENVOY_BIN: string = process.env['ENVOY_BIN'] ?? join(REPO_ROOT, '.venv', 'bin', 'envoy');

/** The router's compiled entry point. */
export const ROUTER_MAIN: string = join(REPO_ROOT, 'dist', 'src', 'main.js');

/** Directory for run artefacts (logs, rendered configs); git-ignored. */
export const RUN_ROOT: string = join(REPO_ROOT, '.run');
