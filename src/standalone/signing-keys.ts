// Standalone's bundle signing keys, in the state folder:
//   signing/current.pem    the key that signs (RSA, PEM, mode 0600), made at the first start
//   signing/previous.pem   during a rotation only: the key the OPAs configured before it verify with
// (folder mode 0700). A key file is refused, with the reason, when it cannot be read, is not an RSA
// private key of 2048 to 4096 bits, or can be read or written by anyone but its owner (like ssh's
// private keys: a key others can read signs for them too). rotate-key and serve's retirement are the
// only writers after the first start; see docs/opa.md#signed-bundles.
import { chmod, link, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { KeyProblem, readSigningKey, type KeyRing, type SigningKey } from '../signing/index.ts';

/** `<state-dir>/signing` and its two key files. */
export function signingKeyFiles(stateDir: string): { readonly dir: string; readonly current: string; readonly previous: string } {
  const dir = join(stateDir, 'signing');
  return { dir, current: join(dir, 'current.pem'), previous: join(dir, 'previous.pem') };
}

/** What one key file holds: nothing, a key, or why it cannot sign (a sentence naming the file). */
export type KeyFile =
  | { readonly kind: 'missing' }
  | { readonly kind: 'key'; readonly key: SigningKey }
  | { readonly kind: 'refused'; readonly problem: string };

/** The largest key file read: a PEM RSA key is a few KiB (with a certificate chain beside it, still far less). */
const MAX_KEY_FILE_BYTES = 1024 * 1024;

/**
 * Reads one key file; never throws. Only a regular file of at most MAX_KEY_FILE_BYTES, with no group
 * or other mode bits, is read at all: a FIFO would block the read (serve's start, every poll after,
 * rotate-key) forever, and a device or an enormous file would be held in memory whole.
 */
export async function readKeyFile(file: string): Promise<KeyFile> {
  let text: string;
  try {
    const s = await stat(file);
    if (!s.isFile()) return { kind: 'refused', problem: `${file} is not a regular file; a key file holds a PEM private key` };
    if ((s.mode & 0o077) !== 0) {
      const octal = (s.mode & 0o777).toString(8).padStart(4, '0');
      return {
        kind: 'refused',
        problem: `${file} can be read or written by other users (mode ${octal}); make it the owner's only: chmod 600 ${file}`,
      };
    }
    if (s.size > MAX_KEY_FILE_BYTES)
      return {
        kind: 'refused',
        problem: `${file} is ${s.size} bytes; a PEM private key is a few KiB (at most ${MAX_KEY_FILE_BYTES} read)`,
      };
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'refused', problem: `${file} cannot be read (${code ?? (err instanceof Error ? err.message : String(err))})` };
  }
  try {
    return { kind: 'key', key: readSigningKey(text) };
  } catch (err) {
    if (err instanceof KeyProblem) return { kind: 'refused', problem: `${file} ${err.message}` };
    throw err;
  }
}

/** Both key files as read now. */
export interface KeyFiles {
  readonly current: KeyFile;
  readonly previous: KeyFile;
}

/** Reads both key files of the state folder. */
export async function readKeyFiles(stateDir: string): Promise<KeyFiles> {
  const files = signingKeyFiles(stateDir);
  const [current, previous] = await Promise.all([readKeyFile(files.current), readKeyFile(files.previous)]);
  return { current, previous };
}

/**
 * The ring the files give, and what is wrong with them. A problem never empties a ring that signed
 * (`lastGood` is kept whole); without one, a good current key still signs alone. A previous key
 * equal to the current one (a rotation interrupted between its two steps) is no previous key.
 */
export function ringOf(
  files: KeyFiles,
  stateDir: string,
  lastGood: KeyRing | undefined,
): { ring: KeyRing | undefined; problem: string | undefined } {
  const names = signingKeyFiles(stateDir);
  const problems: string[] = [];
  if (files.current.kind === 'refused') problems.push(files.current.problem);
  if (files.current.kind === 'missing') {
    problems.push(
      files.previous.kind === 'missing'
        ? `${names.current} is missing`
        : `${names.current} is missing while ${names.previous} exists (a key file was removed by hand)`,
    );
  }
  if (files.previous.kind === 'refused') problems.push(files.previous.problem);
  const current = files.current.kind === 'key' ? files.current.key : undefined;
  const previous = files.previous.kind === 'key' && files.previous.key.kid !== current?.kid ? files.previous.key : undefined;
  if (problems.length === 0 && current) return { ring: previous ? { current, previous } : { current }, problem: undefined };
  return { ring: lastGood ?? (current ? { current } : undefined), problem: problems.join('; ') };
}

/** Writes `pem` to a new temporary file beside `file` (0600, flushed to disk) and returns its name. */
async function writeTemporaryKey(file: string, pem: string): Promise<string> {
  // `<file>.<pid>.tmp`: what removeStaleTemporaryFiles clears when a process died before the rename.
  const tmp = `${file}.${process.pid}.tmp`;
  await rm(tmp, { force: true });
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(pem);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return tmp;
}

/** Flushes a folder's entries (a rename or a link) to disk; best effort, as not every filesystem allows it. */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close();
}

/**
 * At the first start: creates `signing/` (0700) and `current.pem` (0600) with `newKeyPem()` when the
 * folder holds no key file at all. Returns the file it created, or undefined when there was a key.
 * Never overwrites: a current key written by anyone else in the meantime wins.
 */
export async function ensureSigningKey(stateDir: string, newKeyPem: () => string): Promise<string | undefined> {
  const files = signingKeyFiles(stateDir);
  await mkdir(files.dir, { recursive: true, mode: 0o700 });
  await chmod(files.dir, 0o700);
  const exists = async (f: string): Promise<boolean> => (await stat(f).catch(() => undefined)) !== undefined;
  if ((await exists(files.current)) || (await exists(files.previous))) return undefined;
  const tmp = await writeTemporaryKey(files.current, newKeyPem());
  try {
    // A link, not a rename: it fails when current.pem appeared meanwhile, and never leaves half a key.
    await link(tmp, files.current);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return undefined;
  } finally {
    await rm(tmp, { force: true });
  }
  await syncFolder(files.dir);
  return files.current;
}

/** What rotate-key did, or why it did nothing. */
export type Rotation =
  | { readonly ok: true; readonly current: SigningKey; readonly previous: SigningKey }
  | { readonly ok: false; readonly message: string };

/**
 * Starts a rotation: the current key becomes `previous.pem`, a new key `current.pem`. In this order,
 * so a crash at any point leaves a current key and never loses the old one: (1) the new key is
 * written to a temporary file; (2) `previous.pem` is made a hard link of `current.pem` (both name the
 * old key; this fails when a rotation already runs); (3) the temporary file is renamed over
 * `current.pem`. A crash after (2) leaves previous = current, which serve reads as no rotation and
 * which the next rotate-key completes.
 */
export async function rotateSigningKey(stateDir: string, newKeyPem: () => string): Promise<Rotation> {
  const files = signingKeyFiles(stateDir);
  const { current, previous } = await readKeyFiles(stateDir);
  if (current.kind === 'missing') {
    if (previous.kind !== 'missing') {
      // serve makes no key beside a previous.pem (it refuses to start): naming the first-start key would mislead.
      return {
        ok: false,
        message: `${files.current} does not exist while ${files.previous} exists (a key file was removed by hand): put the current key back, or remove ${files.previous} too to have serve make a new key (OPAs configured with the old keys then need their rewritten configurations)`,
      };
    }
    return { ok: false, message: `${files.current} does not exist: acl-operator serve creates the first key when it starts` };
  }
  if (current.kind === 'refused') return { ok: false, message: `${current.problem}. Fix it before rotating` };
  if (previous.kind === 'refused') return { ok: false, message: `a rotation is running, and ${previous.problem}` };
  const interrupted = previous.kind === 'key' && previous.key.kid === current.key.kid;
  if (previous.kind === 'key' && !interrupted) {
    return {
      ok: false,
      message:
        `a rotation is already running: ${files.previous} (${previous.key.kid}) is retired by acl-operator serve once every ` +
        `agent reports the current key ${current.key.kid}. Restart the OPAs still pinned to ${previous.key.kid} with their ` +
        `rewritten configurations (${join(stateDir, 'opa')}), then rotate again`,
    };
  }
  const tmp = await writeTemporaryKey(join(files.dir, 'next.pem'), newKeyPem());
  try {
    if (!interrupted) await link(files.current, files.previous);
    await rename(tmp, files.current);
  } catch (err) {
    await rm(tmp, { force: true });
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      return { ok: false, message: `a rotation is already running: ${files.previous} appeared while this one started` };
    }
    throw err;
  }
  await syncFolder(files.dir);
  const after = await readKeyFile(files.current);
  if (after.kind !== 'key') return { ok: false, message: `the new key could not be read back from ${files.current}` };
  return { ok: true, current: after.key, previous: current.key };
}

/** Deletes `previous.pem`: the rotation is over (serve, once every agent verifies with the current key). */
export async function retirePreviousKey(stateDir: string): Promise<void> {
  const files = signingKeyFiles(stateDir);
  await rm(files.previous, { force: true });
  await syncFolder(files.dir);
}

/** What changes when a key file is replaced, touched or chmod-ed: compared every poll, cheaply. */
export async function keyFilesStamp(stateDir: string): Promise<string> {
  const files = signingKeyFiles(stateDir);
  const one = async (f: string): Promise<string> => {
    const s = await stat(f).catch(() => undefined);
    return s ? `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.mode}` : '-';
  };
  return `${await one(files.current)}|${await one(files.previous)}`;
}
