/**
 * Provenance of a benchmark run (run.json): what was run, from which commit, on what
 * machine and with which component versions. Every probe is best-effort; a missing tool
 * shows up as null rather than failing the run.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';

function tryRun(cmd: string, args: readonly string[], cwd: string): string | null {
  try {
    return execFileSync(cmd, [...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return null;
  }
}

export interface RunInfo {
  readonly gitCommit: string | null;
  /** Paths with uncommitted changes under src/ and bench/ when the run started. */
  readonly gitDirty: readonly string[];
  readonly node: string;
  readonly envoy: string | null;
  readonly sglangRouter: string | null;
  readonly vllmRouter: string | null;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memGiB: number;
  readonly loadAvgAtStart: readonly number[];
}

/**
 * Paths from `git status --porcelain` output (bench/results/ left out). The output may come
 * trimmed, so the first line can have lost the leading space of its two-letter status.
 */
export function dirtyPaths(porcelain: string): string[] {
  return porcelain
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.replace(/^.{0,2}\s/, ''))
    .filter((p) => !p.startsWith('bench/results/'));
}

export function collectRunInfo(repoRoot: string): RunInfo {
  const py = join(repoRoot, '.venv', 'bin', 'python');
  const pkgVersion = (name: string): string | null =>
    tryRun(py, ['-c', `import importlib.metadata as m; print(m.version('${name}'))`], repoRoot);
  const envoyOut = tryRun(join(repoRoot, '.venv', 'bin', 'envoy'), ['--version'], repoRoot);
  const dirty = tryRun('git', ['status', '--porcelain', '--', 'src', 'bench'], repoRoot);
  return {
    gitCommit: tryRun('git', ['rev-parse', 'HEAD'], repoRoot),
    gitDirty: dirty ? dirtyPaths(dirty) : [],
    node: process.version,
    envoy: envoyOut ? (/version: \S*?\/(\d+\.\d+\.\d+)\//.exec(envoyOut)?.[1] ?? envoyOut.split('\n')[0] ?? null) : null,
    sglangRouter: pkgVersion('sglang-router'),
    vllmRouter: pkgVersion('vllm-router'),
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round(totalmem() / 2 ** 30),
    loadAvgAtStart: loadavg().map((v) => Math.round(v * 100) / 100),
  };
}
