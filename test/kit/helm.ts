/**
 * The helm CLI (v4, built by scripts/setup-deploy-tools.sh into .bin/) for the chart tests:
 * one call, its exit code and output, never a throw for a non-zero exit (tests assert on it).
 *
 *   const r = await helm(['template', 'rel', CHART, '--set', 'replicaCount=2']);
 *   expect(r.code, r.stderr).to.equal(0);
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { runDir } from './managed-process.js';
import { REPO_ROOT } from './repo-paths.js';

/** Override with HELM_BIN. */
export const HELM_BIN = process.env['HELM_BIN'] ?? join(REPO_ROOT, '.bin', 'helm');

export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm with its caches and config under the run directory (no user state touched). */
export function helm(args: readonly string[], opts: { timeoutMs?: number } = {}): Promise<HelmResult> {
  const home = join(runDir(), 'helm-home');
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  return new Promise((resolve) => {
    execFile(HELM_BIN, [...args], { env, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr: err !== null && stderr === '' ? String(err.message) : stderr });
    });
  });
}
