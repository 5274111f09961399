/** Output of a git command run in the working directory, or 'unknown' (results record the commit). */
import { execFileSync } from 'node:child_process';

export function gitOutput(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
