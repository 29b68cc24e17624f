// The console's actions in standalone mode: the manifest file that holds the object is edited in
// place (yaml-edit.ts: only the changed lines differ), so the folder stays the source of truth; the
// folder watcher then reads the file and the controllers apply the change like any other edit.
// The file is written atomically (a temporary file beside it, then a rename) and keeps its mode.
import { randomBytes } from 'node:crypto';
import { chmod, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import type { Logger } from 'pino';
import { changesProblem, type EditOutcome, type ObjectEditor, type ObjectKey } from '../controller/index.ts';
import { editManifestText } from './yaml-edit.ts';

/** Where the folder source read an object: its file (relative to the folder) and document (1-based; 0: held from the state folder). */
export interface ManifestOrigin {
  readonly source: string;
  readonly document: number;
}

export interface ManifestEditorOptions {
  /** The manifests folder, as given to the folder source. */
  readonly dir: string;
  /** Which file and document hold an object (FolderSource.origin). */
  readonly objects: { origin(key: ObjectKey): ManifestOrigin | undefined };
  readonly log?: Logger;
}

function fail(status: 404 | 409 | 422 | 500, message: string): EditOutcome {
  return { ok: false, status, message };
}

function errorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ? `${e.code}: ${e.message.replace(/^[A-Z]+: /, '')}` : String(err);
}

/** An ObjectEditor that edits the manifest file an object was read from. */
export function createManifestEditor(options: ManifestEditorOptions): ObjectEditor {
  const queues = new Map<string, Promise<unknown>>();
  /** Edits of one file run one after the other, so neither overwrites the other. */
  const serial = (file: string, run: () => Promise<EditOutcome>): Promise<EditOutcome> => {
    const next = (queues.get(file) ?? Promise.resolve()).then(run, run);
    queues.set(file, next);
    return next.finally(() => {
      if (queues.get(file) === next) queues.delete(file);
    });
  };
  return {
    async edit(key, changes) {
      const id = `${key.kind} ${key.namespace}/${key.name}`;
      const problem = changesProblem(changes);
      if (problem) return fail(422, `${id} was not changed: ${problem}.`);
      const origin = options.objects.origin(key);
      if (!origin) return fail(404, `${id} is not in the manifests folder ${options.dir}.`);
      const file = join(options.dir, origin.source);
      if (origin.document === 0 || origin.source === '')
        return fail(
          409,
          `${id} is held from the state folder, not read from a manifest: ${origin.source ? `${file} could not be read at the last scan` : 'its manifest file is not known'}. The manifests folder is the source of truth; fix the file, then try again.`,
        );
      return serial(file, () => editFile(options, key, changes, origin, file));
    },
  };
}

/** Reads the file, edits the object's document and writes it back unless the file changed meanwhile. */
async function editFile(
  options: ManifestEditorOptions,
  key: ObjectKey,
  changes: Parameters<ObjectEditor['edit']>[1],
  origin: ManifestOrigin,
  file: string,
): Promise<EditOutcome> {
  let real: string;
  let text: string;
  try {
    real = await realpath(file);
    const root = await realpath(options.dir);
    if (!real.startsWith(root + sep)) return fail(422, `${file} leads outside the manifests folder ${options.dir}; it is not edited.`);
    text = await readFile(real, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return fail(409, `${file} no longer exists: the folder changed since it was read.`);
    return fail(500, `${file} cannot be read (${errorText(err)}).`);
  }
  const edited = editManifestText(text, file, key, changes, origin.document);
  if (!edited.ok) return edited;
  const where = `${file}, document ${edited.document}`;
  if (edited.text === text) return { ok: true, where };
  try {
    if ((await readFile(real, 'utf8')) !== text) return fail(409, `${file} changed while it was being edited; try again.`);
    await writeBeside(real, edited.text);
  } catch (err) {
    return fail(500, `${file} cannot be written (${errorText(err)}).`);
  }
  options.log?.info(
    { file, document: edited.document, fields: changes.map((c) => c.path.join('.')) },
    'Edited manifest for a console action',
  );
  return { ok: true, where };
}

/** Writes `text` to `file` through a temporary file in its folder (a name the folder source skips) and a rename, keeping its mode. */
async function writeBeside(file: string, text: string): Promise<void> {
  const { mode } = await stat(file);
  const tmp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, text, { mode: mode & 0o7777, flag: 'wx' });
    await chmod(tmp, mode & 0o7777);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
