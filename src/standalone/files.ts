// How the state folder's files are written and read: atomically (a temporary file, then a rename, so
// a reader such as acl-operator status or OPA's token_path never sees half a file), one write at a
// time per file, and a file or folder that is not there read as nothing.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';

/** The temporary file of a write in progress: `<file>.<pid>.tmp`. */
const TEMPORARY = /\.([0-9]+)\.tmp$/;

/** Writes `content` to `file` through a temporary file and a rename, creating the folder as needed. */
export async function writeAtomic(file: string, content: string | Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, file);
}

/** Whether process `pid` runs (one we may not signal runs too). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temporary files under `dir` that no write will finish: left by a process killed
 * mid-write (kill -9, OOM), or by this process's pid in an earlier life (a container's pid repeats).
 * Called before this process writes anything. Returns their names, relative to `dir`.
 */
export async function removeStaleTemporaryFiles(dir: string): Promise<string[]> {
  const names = await unlessMissing(() => readdir(dir, { recursive: true }), []);
  const stale = names
    .filter((n) => {
      const pid = Number(TEMPORARY.exec(n)?.[1] ?? Number.NaN);
      return Number.isSafeInteger(pid) && (pid === process.pid || !running(pid));
    })
    .sort();
  for (const n of stale) await rm(join(dir, n), { force: true });
  return stale;
}

/** Runs `write` after every write to `file` asked for before it, whether those failed or not. */
export type Serial = (file: string, write: () => Promise<void>) => Promise<void>;

/** A state folder and the one serial writer of its files. */
export interface StateFiles {
  readonly dir: string;
  readonly serial: Serial;
}

/** A Serial: writes to one file are chained so a slow write never lands after a newer one. */
export function createSerial(): Serial {
  const chains = new Map<string, Promise<void>>();
  return (file, write) => {
    const next = (chains.get(file) ?? Promise.resolve()).then(write, write);
    chains.set(file, next);
    return next.finally(() => {
      if (chains.get(file) === next) chains.delete(file);
    });
  };
}

/** What `read` gives, or `missing` when it fails because a file or folder does not exist (any other failure throws). */
export async function unlessMissing<T>(read: () => Promise<T>, missing: T): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return missing;
    throw err;
  }
}

/** A file's text, or undefined when it cannot be read for any reason. */
export function readTextOrUndefined(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch(() => undefined);
}

/** The names of the files under `dir` (recursively) ending in `suffix`, sorted; none when `dir` is missing. */
export function fileNames(dir: string, suffix: string): Promise<string[]> {
  return unlessMissing(async () => (await readdir(dir, { recursive: true })).filter((n) => n.endsWith(suffix)).sort(), []);
}

/** Every `.yaml` file under `dir`, parsed, in name order; none when `dir` is missing. */
export async function readYamlFiles(dir: string): Promise<unknown[]> {
  const names = await fileNames(dir, '.yaml');
  return Promise.all(names.map(async (n) => parse(await readFile(join(dir, n), 'utf8')) as unknown));
}
