// What every command reading a manifests folder checks first.
import { stat } from 'node:fs/promises';

/** Why `dir` cannot be read as a folder ("not a folder", ENOENT, ...), or undefined when it can. */
export async function folderProblem(dir: string): Promise<string | undefined> {
  try {
    return (await stat(dir)).isDirectory() ? undefined : 'not a folder';
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
