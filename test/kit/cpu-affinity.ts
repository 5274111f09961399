/**
 * CPU affinity of a process: the vLLM launcher binds an in-process model worker's engine to
 * its core (vLLM binds the OMP thread only in a worker process of its own). Linux only
 * (`/proc`, `taskset` from util-linux).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** Throws unless `core` names one of this machine's cores. */
export function checkCore(core: number, what: string): void {
  const n = cpus().length;
  if (!Number.isInteger(core) || core < 0 || core >= n) throw new RangeError(`${what} must be a core 0..${n - 1}, got ${core}`);
}

/** The CPUs a process may run on (`Cpus_allowed_list` of /proc/<pid>/status, e.g. `0-1`). */
export function allowedCpus(pid: number | 'self' = 'self'): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(status);
  if (m === null) throw new Error(`no Cpus_allowed_list in /proc/${pid}/status`);
  return m[1] as string;
}

/** Moves every thread of `pid` to `cpuList` (a `taskset -c` list); returns the list it had. */
export function setAffinity(pid: number, cpuList: string): string {
  if (!/^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/.test(cpuList)) throw new RangeError(`not a CPU list: ${JSON.stringify(cpuList)}`);
  const before = allowedCpus(pid);
  try {
    execFileSync('taskset', ['-a', '-c', '-p', cpuList, String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(
      `taskset could not move pid ${pid} to CPUs ${cpuList}: ${stderr || (err instanceof Error ? err.message : String(err))}`,
    );
  }
  return before;
}
