/**
 * The baseline the bars compare against: a built checkout of another commit. Given a
 * directory, it is used as it is (built with tsc if it has no dist/ yet); given a commit,
 * a detached git worktree is made under .run/ (ignored), its dependencies installed with
 * `npm ci` unless its lock file is this checkout's, and it is built with tsc. A worktree
 * that is already built is reused.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface Build {
  /** Checkout root (holds dist/src/main.js). */
  readonly dir: string;
  readonly commit: string;
  /** Uncommitted changes under src/ or proto/ in that checkout. */
  readonly dirty: boolean;
}

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function describeBuild(dir: string): Build {
  return { dir, commit: git(dir, ['rev-parse', 'HEAD']), dirty: git(dir, ['status', '--porcelain', '--', 'src', 'proto']) !== '' };
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
