// CPU time from /proc: per process (for OPA, which cannot report its own) and per core (to see load
// from outside the benchmark: the machine may be shared). Ticks are USER_HZ, 10 ms on most systems.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

const TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
const ticksToUs = (ticks: number): number => (ticks / TICKS_PER_S) * 1e6;

/** utime + stime of a process, µs (fields 14 and 15 of /proc/<pid>/stat; field 2 may hold spaces). */
export async function processCpuUs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ticksToUs(Number(fields[11]) + Number(fields[12]));
}

/**
 * Time each core spent on processes (user, nice, system) or lost to the hypervisor (steal), µs.
 * Interrupt time is left out: loopback traffic is handled there and grows with the request rate.
 */
export async function coreBusyUs(): Promise<number[]> {
  const stat = await readFile('/proc/stat', 'utf8');
  return [...stat.matchAll(/^cpu(\d+) (.*)$/gm)].map((m) => {
    const [user, nice, system, , , , , steal] = (m[2] as string).trim().split(/\s+/).map(Number);
    return ticksToUs((user ?? 0) + (nice ?? 0) + (system ?? 0) + (steal ?? 0));
  });
}
