import { generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateSigningKeyPem, readSigningKey } from '../signing/index.ts';
import {
  ensureSigningKey,
  keyFilesStamp,
  readKeyFiles,
  retirePreviousKey,
  ringOf,
  rotateSigningKey,
  signingKeyFiles,
} from './signing-keys.ts';

// A few keys made once (RSA generation is slow), handed out in turn as "new" keys.
const PEMS = Array.from({ length: 4 }, () => generateSigningKeyPem(2048));
const KIDS = PEMS.map((p) => readSigningKey(p).kid);
function keyMaker(start = 0): () => string {
  let i = start;
  return () => PEMS[i++ % PEMS.length] as string;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'acl-signing-'));
  dirs.push(d);
  return d;
}

const modeOf = (f: string): number => statSync(f).mode & 0o777;

describe('the signing key of the state folder', () => {
  it('is made at the first start as signing/current.pem (0600, folder 0700) and never replaced by a later start', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    expect(await ensureSigningKey(dir, keyMaker(0))).toBe(files.current);
    expect(modeOf(files.current)).toBe(0o600);
    expect(modeOf(files.dir)).toBe(0o700);
    expect(await ensureSigningKey(dir, keyMaker(1))).toBeUndefined();
    expect(ringOf(await readKeyFiles(dir), dir, undefined)).toEqual({
      ring: { current: expect.objectContaining({ kid: KIDS[0] }) },
      problem: undefined,
    });
    expect(existsSync(`${files.current}.${process.pid}.tmp`)).toBe(false);
  });

  it('refuses a key file that cannot sign or that others can read, naming the file and why', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    await ensureSigningKey(dir, keyMaker(0));
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases: [string, number, RegExp][] = [
      [PEMS[0] as string, 0o644, /current\.pem can be read or written by other users \(mode 0644\); .*chmod 600 /],
      [PEMS[0] as string, 0o620, /mode 0620/],
      ['not a key', 0o600, /current\.pem is not a PEM private key/],
      [weak, 0o600, /current\.pem is an RSA key of 1024 bits; at least 2048 are required/],
      [ec, 0o600, /current\.pem is an ec key/],
    ];
    const good = ringOf(await readKeyFiles(dir), dir, undefined).ring;
    for (const [text, mode, problem] of cases) {
      writeFileSync(files.current, text);
      chmodSync(files.current, mode);
      const read = ringOf(await readKeyFiles(dir), dir, good);
      expect(read.problem).toMatch(problem);
      // The last good ring keeps signing; without one, nothing signs.
      expect(read.ring).toBe(good);
      expect(ringOf(await readKeyFiles(dir), dir, undefined).ring).toBeUndefined();
    }
    rmSync(files.current);
    expect(ringOf(await readKeyFiles(dir), dir, good)).toEqual({ ring: good, problem: `${files.current} is missing` });
  });

  it('keeps signing with a good current key alone when previous.pem is broken at start', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    await ensureSigningKey(dir, keyMaker(0));
    writeFileSync(files.previous, 'garbage', { mode: 0o600 });
    const read = ringOf(await readKeyFiles(dir), dir, undefined);
    expect(read.ring?.current.kid).toBe(KIDS[0]);
    expect(read.ring?.previous).toBeUndefined();
    expect(read.problem).toMatch(/previous\.pem is not a PEM private key/);
  });
  it('refuses a key file that is not a regular file or is enormous without reading it (a FIFO would hang every poll)', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    await ensureSigningKey(dir, keyMaker(0));
    const good = ringOf(await readKeyFiles(dir), dir, undefined).ring;
    const within = <T>(p: Promise<T>): Promise<T> =>
      Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('the read hangs')), 2000))]);
    // A FIFO nobody writes to: reading it blocks forever (the poll, serve's start, rotate-key).
    rmSync(files.previous, { force: true });
    execFileSync('mkfifo', ['-m', '600', files.previous]);
    const fifo = ringOf(await within(readKeyFiles(dir)), dir, good);
    expect(fifo.problem).toMatch(/previous\.pem is not a regular file/);
    expect(fifo.ring).toBe(good);
    rmSync(files.previous);
    // A character device that never ends (other users' mode bits are checked before any read, too).
    symlinkSync('/dev/zero', files.previous);
    expect(ringOf(await within(readKeyFiles(dir)), dir, good).problem).toMatch(/previous\.pem is not a regular file/);
    rmSync(files.previous);
    // An enormous file: a good key followed by junk, refused by its size.
    writeFileSync(files.previous, PEMS[1] + 'x'.repeat(2 * 1024 * 1024), { mode: 0o600 });
    expect(ringOf(await within(readKeyFiles(dir)), dir, good).problem).toMatch(/previous\.pem is \d+ bytes/);
  });
});

describe('rotate-key on the state folder', () => {
  it('makes the current key previous.pem and a new key current.pem, both 0600', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    await ensureSigningKey(dir, keyMaker(0));
    const rotation = await rotateSigningKey(dir, keyMaker(1));
    expect(rotation).toMatchObject({ ok: true, current: { kid: KIDS[1] }, previous: { kid: KIDS[0] } });
    expect(modeOf(files.current)).toBe(0o600);
    expect(modeOf(files.previous)).toBe(0o600);
    const { ring, problem } = ringOf(await readKeyFiles(dir), dir, undefined);
    expect([ring?.current.kid, ring?.previous?.kid, problem]).toEqual([KIDS[1], KIDS[0], undefined]);
  });

  it('refuses while a rotation runs, and when there is no key or a broken one, saying what to do', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    expect(await rotateSigningKey(dir, keyMaker(1))).toEqual({
      ok: false,
      message: `${files.current} does not exist: acl-operator serve creates the first key when it starts`,
    });
    // previous.pem alone (current.pem removed by hand): serve makes no key then, it refuses to start.
    mkdirSync(files.dir, { mode: 0o700 });
    writeFileSync(files.previous, PEMS[0] as string, { mode: 0o600 });
    const orphan = await rotateSigningKey(dir, keyMaker(1));
    expect(orphan.ok).toBe(false);
    expect(orphan.ok ? '' : orphan.message).not.toContain('serve creates the first key');
    expect(orphan.ok ? '' : orphan.message).toContain(`${files.previous} exists`);
    rmSync(files.previous);
    await ensureSigningKey(dir, keyMaker(0));
    await rotateSigningKey(dir, keyMaker(1));
    const again = await rotateSigningKey(dir, keyMaker(2));
    expect(again).toMatchObject({ ok: false, message: expect.stringMatching(/^a rotation is already running: .*previous\.pem \(acl-/) });
    // Refusing changed nothing.
    expect(ringOf(await readKeyFiles(dir), dir, undefined).ring?.current.kid).toBe(KIDS[1]);
    chmodSync(files.current, 0o644);
    expect(await rotateSigningKey(dir, keyMaker(2))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/mode 0644.*Fix it before rotating/),
    });
  });

  it('leaves a current key and the old key at every step of an interrupted rotation, and the next rotate-key completes it', async () => {
    const dir = stateDir();
    const files = signingKeyFiles(dir);
    await ensureSigningKey(dir, keyMaker(0));
    const old = readFileSync(files.current, 'utf8');
    // Killed after step (1): a temporary file, nothing else changed; the next serve start removes it.
    writeFileSync(join(files.dir, 'next.pem.999999.tmp'), PEMS[3] as string, { mode: 0o600 });
    expect(ringOf(await readKeyFiles(dir), dir, undefined)).toMatchObject({ ring: { current: { kid: KIDS[0] } }, problem: undefined });
    // Killed after step (2): previous.pem is a link of current.pem, the same key: no rotation yet.
    linkSync(files.current, files.previous);
    const midway = ringOf(await readKeyFiles(dir), dir, undefined);
    expect([midway.ring?.current.kid, midway.ring?.previous, midway.problem]).toEqual([KIDS[0], undefined, undefined]);
    const rotation = await rotateSigningKey(dir, keyMaker(1));
    expect(rotation).toMatchObject({ ok: true, current: { kid: KIDS[1] }, previous: { kid: KIDS[0] } });
    expect(readFileSync(files.previous, 'utf8')).toBe(old);
  });

  it('runs ten rotations in a row, each retired before the next, every one moving the ring by one key', async () => {
    const dir = stateDir();
    await ensureSigningKey(dir, keyMaker(0));
    const next = keyMaker(1);
    let stamp = await keyFilesStamp(dir);
    for (let i = 1; i <= 10; i++) {
      const before = ringOf(await readKeyFiles(dir), dir, undefined).ring?.current.kid;
      const rotation = await rotateSigningKey(dir, next);
      expect(rotation.ok).toBe(true);
      const during = ringOf(await readKeyFiles(dir), dir, undefined).ring;
      expect(during?.previous?.kid).toBe(before);
      expect(during?.current.kid).toBe(KIDS[i % KIDS.length]);
      // Each change of the files shows in the stamp serve polls.
      const after = await keyFilesStamp(dir);
      expect(after).not.toBe(stamp);
      await retirePreviousKey(dir);
      stamp = await keyFilesStamp(dir);
      expect(stamp).not.toBe(after);
      expect(ringOf(await readKeyFiles(dir), dir, undefined).ring?.previous).toBeUndefined();
    }
  });
});
