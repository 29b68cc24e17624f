// Files of the state folder are written atomically: a temporary file, then a rename, so a reader
// (acl-operator status, OPA's token_path) never sees half a file.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function writeAtomic(file: string, content: string | Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, file);
}
