/** CPU time of a process from /proc/<pid>/stat (Linux), in seconds. */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime/stime (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

export interface ProcCpu {
  readonly user: number;
  readonly system: number;
}

export function procCpu(pid: number): ProcCpu {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name (which may contain spaces).
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(rest[11]) / USER_HZ, system: Number(rest[12]) / USER_HZ };
}

/** User + system CPU seconds. */
export function procCpuSeconds(pid: number): number {
  const c = procCpu(pid);
  return c.user + c.system;
}
