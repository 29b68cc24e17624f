// Standalone's signing keys at work: read from the state folder at start (a first key made when there
// is none), then followed by a cheap poll (a stat of two files every 2 s) into the SigningHolder the
// controller signs with, and the previous key retired once every agent verifies with the current one.
// A file that goes bad is logged once and the last good ring keeps signing.
import type { Logger } from 'pino';
import type { SigningHolder } from '../controller/index.ts';
import { generateSigningKeyPem, KeyProblem, type KeyRing } from '../signing/index.ts';
import { ensureSigningKey, keyFilesStamp, readKeyFiles, retirePreviousKey, ringOf, signingKeyFiles } from '../standalone/index.ts';

/** How often the key files are looked at (a stat each). */
export const KEY_POLL_MS = 2000;

export interface KeyFolderOptions {
  readonly stateDir: string;
  readonly holder: SigningHolder;
  readonly log: Logger;
  /** How a first key is made (tests pass a cached one: RSA generation is slow). */
  readonly newKeyPem?: () => string;
  readonly pollMs?: number;
  /** Whether the previous key may go now: every agent of every bundle reports the current kid (the fleet's retirementDue). */
  readonly retirementDue: (currentKid: string) => boolean;
}

export interface KeyFolder {
  /** Reads the key files again now, and retires the previous key when due. */
  check(): Promise<void>;
  close(): void;
}

const kidsOf = (ring: KeyRing | undefined): { kid?: string; previous?: string } =>
  ring ? { kid: ring.current.kid, ...(ring.previous ? { previous: ring.previous.kid } : {}) } : {};

/**
 * Reads the key files into `holder` (made at the first start) and follows them. Throws KeyProblem,
 * naming the file and what to do, when no good key can be read at all: nothing would be served.
 */
export async function followKeyFolder(o: KeyFolderOptions): Promise<KeyFolder> {
  const { stateDir, holder, log } = o;
  const created = await ensureSigningKey(stateDir, o.newKeyPem ?? generateSigningKeyPem);
  // The ring that signed last: a file that goes bad never takes it away.
  let lastGood: KeyRing | undefined;
  let logged: string | undefined;
  let stamp = '';
  const read = async (): Promise<{ ring: KeyRing | undefined; problem: string | undefined }> => {
    stamp = await keyFilesStamp(stateDir);
    const { ring, problem } = ringOf(await readKeyFiles(stateDir), stateDir, lastGood);
    if (problem !== logged) {
      // Once per distinct problem; the problem names the file, never the key.
      if (problem !== undefined) log.error({ problem, ...kidsOf(ring) }, 'Refused a signing key file; the last good keys keep signing');
      logged = problem;
    }
    const before = lastGood;
    if (ring) lastGood = ring;
    holder.set({ unsigned: false, ring, problem });
    if (ring && (before?.current.kid !== ring.current.kid || before?.previous?.kid !== ring.previous?.kid)) {
      log.info(kidsOf(ring), 'Read the bundle signing keys');
    }
    return { ring, problem };
  };
  const first = await read();
  if (!first.ring) {
    throw new KeyProblem(
      `cannot sign bundles: ${first.problem ?? 'no key'}. Put a good RSA key (2048 to 4096 bits, PEM, mode 0600) in ` +
        `${signingKeyFiles(stateDir).current}, or remove the broken file to have a new key made (OPAs configured with the ` +
        `old key then need their rewritten configuration), or serve with --unsigned-bundles`,
    );
  }
  if (created) log.info({ file: created, kid: first.ring.current.kid }, 'Generated a bundle signing key');

  let running: Promise<void> | undefined;
  const check = async (): Promise<void> => {
    if ((await keyFilesStamp(stateDir)) !== stamp) await read();
    const s = holder.get();
    if (!s.unsigned && s.problem === undefined && s.ring?.previous && o.retirementDue(s.ring.current.kid)) {
      await retirePreviousKey(stateDir);
      log.info(
        { kid: s.ring.current.kid, retired: s.ring.previous.kid },
        'Retired the previous signing key: every agent verifies with the current one',
      );
      await read();
    }
  };
  const timer = setInterval(() => {
    running ??= check()
      .catch((err: unknown) => log.error({ err }, 'Failed to read the signing keys'))
      .finally(() => {
        running = undefined;
      });
  }, o.pollMs ?? KEY_POLL_MS);
  timer.unref();
  return {
    check: async () => {
      await running;
      await check();
    },
    close: () => clearInterval(timer),
  };
}
