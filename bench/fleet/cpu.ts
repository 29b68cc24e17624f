// A process's CPU time from /proc, split the ways bench/http/procfs.ts does not: user and system
// time (the kernel receiving uploads and writing files), and per thread (the JavaScript thread
// against V8's GC helpers and libuv's pool), none of which a JavaScript CPU profile shows.
import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

const TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

export interface CpuTimes {
  readonly userUs: number;
  readonly systemUs: number;
}

/** utime and stime of a process, all its threads, µs (fields 14 and 15 of /proc/<pid>/stat); or of one thread, from its own stat file. */
export async function processTimes(pid: number, file = `/proc/${pid}/stat`): Promise<CpuTimes> {
  const text = await readFile(file, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const us = (ticks: string | undefined): number => (Number(ticks) / TICKS_PER_S) * 1e6;
  return { userUs: us(fields[11]), systemUs: us(fields[12]) };
}

/** User + system time of a process's main thread (the JavaScript thread of a Node process), µs. */
export async function mainThreadUs(pid: number): Promise<number> {
  const t = await processTimes(pid, `/proc/${pid}/task/${pid}/stat`);
  return t.userUs + t.systemUs;
}

/** CPU time of each of a process's threads by thread name (/proc/<pid>/task/<tid>/comm), µs. */
export async function threadTimes(pid: number): Promise<Map<string, number>> {
  const byName = new Map<string, number>();
  const dir = `/proc/${pid}/task`;
  for (const tid of await readdir(dir)) {
    try {
      const name = (await readFile(`${dir}/${tid}/comm`, 'utf8')).trim();
      const t = await processTimes(Number(tid), `${dir}/${tid}/stat`);
      byName.set(name, (byName.get(name) ?? 0) + t.userUs + t.systemUs);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}
