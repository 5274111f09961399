/**
 * The baseline the bars compare against: a built checkout of another commit. Given a
 * directory, it is used as it is (built with tsc if it has no dist/ yet); given a commit,
 * a detached git worktree is made under .run/ (ignored), its dependencies installed with
 * `npm ci` unless its lock file is this checkout's, and it is built with tsc. A worktree
 * that is already built is reused.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface Build {
  /** Checkout root (holds dist/src/main.js). */
  readonly dir: string;
  readonly commit: string;
  /** Uncommitted changes under src/ or proto/ in that checkout. */
  readonly dirty: boolean;
  /**
   * Its config knows `server.responseCompletion` (added at a9236a3, default `access-log`):
   * it must be told `ext-proc` to read responses from its stream. A build without the key
   * always does (and refuses the key).
   */
  readonly responseCompletion: boolean;
}

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function describeBuild(dir: string): Build {
  return {
    dir,
    commit: git(dir, ['rev-parse', 'HEAD']),
    dirty: git(dir, ['status', '--porcelain', '--', 'src', 'proto']) !== '',
    responseCompletion: knowsResponseCompletion(dir),
  };
}

/**
 * Asks the build's own `cacheroute validate` whether its config takes `server.responseCompletion`.
 * A minimal config without the key must pass (else the build is broken and this throws).
 */
export function knowsResponseCompletion(dir: string): boolean {
  const tmp = mkdtempSync(join(tmpdir(), 'cacheroute-bars-validate-'));
  const valid = (server: string): boolean => {
    const file = join(tmp, 'router.yaml');
    writeFileSync(file, `apiVersion: cacheroute/v1\n${server}endpoints:\n  - address: 127.0.0.1:8001\n`);
    const r = spawnSync(process.execPath, [join(dir, 'dist', 'src', 'main.js'), 'validate', '--config', file], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    return r.status === 0;
  };
  try {
    if (!valid('')) throw new Error(`${dir}: cacheroute validate refuses a minimal config`);
    return valid('server:\n  responseCompletion: ext-proc\n');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function build(dir: string, log: (m: string) => void): void {
  if (existsSync(join(dir, 'dist', 'src', 'main.js'))) return;
  log(`building ${dir} (tsc)`);
  execFileSync(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
    cwd: dir,
    stdio: 'inherit',
  });
}

/** Resolves `spec` (a directory or a commit of this repository) to a built checkout. */
export function prepareBaseline(spec: string, repoRoot: string, log: (m: string) => void): Build {
  const asDir = resolve(spec);
  if (existsSync(join(asDir, 'package.json'))) {
    build(asDir, log);
    return describeBuild(asDir);
  }
  const commit = git(repoRoot, ['rev-parse', '--verify', `${spec}^{commit}`]);
  const dir = join(repoRoot, '.run', `baseline-${commit.slice(0, 12)}`);
  if (!existsSync(dir)) {
    log(`making a worktree of ${commit.slice(0, 12)} at ${dir}`);
    git(repoRoot, ['worktree', 'add', '--detach', dir, commit]);
  }
  if (!existsSync(join(dir, 'node_modules'))) {
    const same = readFileSync(join(dir, 'package-lock.json'), 'utf8') === readFileSync(join(repoRoot, 'package-lock.json'), 'utf8');
    if (same) symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
    else {
      log(`installing the baseline's dependencies (npm ci) in ${dir}`);
      execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
    }
  }
  build(dir, log);
  return describeBuild(dir);
}
