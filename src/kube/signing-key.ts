// The bundle signing key in Kubernetes mode: one Secret in the operator namespace (--signing-key-secret),
// read by every replica into the SigningHolder and kept by the leader: created with a new key when
// missing, rotated when its `acl.policyagent.dev/rotate` annotation takes a new value, and its previous
// key removed once every agent verifies with the current one (docs/kubernetes.md, "The signing key").
// A Secret that cannot sign never empties the ring: the last good keys keep signing and `problem` says why.
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { signingFingerprint, type SigningHolder, type SigningState } from '../controller/index.ts';
import { generateSigningKeyPem, KeyProblem, readSigningKey, type KeyRing } from '../signing/index.ts';
import { describeError, LABEL_MANAGED_BY, MANAGED_BY, statusOf } from './client.ts';

/** Any new value starts a rotation (`kubectl annotate --overwrite secret acl-signing-key acl.policyagent.dev/rotate=<anything new>`). */
export const ANNOTATION_ROTATE = 'acl.policyagent.dev/rotate';
/** The rotate value the leader has handled: a restart never rotates twice for one value. */
export const ANNOTATION_ROTATED = 'acl.policyagent.dev/rotated';
/** The kid of `tls.key`, and of `previous.key` during a rotation: for readers of `kubectl get -o yaml`. */
export const ANNOTATION_KEY_ID = 'acl.policyagent.dev/key-id';
export const ANNOTATION_PREVIOUS_KEY_ID = 'acl.policyagent.dev/previous-key-id';
/** The current key (PEM RSA): the name kubernetes.io/tls Secrets give their private key. */
export const CURRENT_KEY = 'tls.key';
/** The key that signed before the rotation running now, for the OPAs still pinned to it. */
export const PREVIOUS_KEY = 'previous.key';
const TYPES: readonly string[] = ['Opaque', 'kubernetes.io/tls'];

/** What a Secret holds: the ring and the PEM texts it was read from, or why it cannot sign. */
export type KeySecretReading =
  | { readonly ring: KeyRing; readonly currentPem: string; readonly problem?: undefined }
  | { readonly problem: string; readonly missing: boolean };

function text(secret: V1Secret, field: string): string | undefined {
  const b64 = secret.data?.[field];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
}

/** Reads a signing key Secret (undefined: there is none); every problem names the Secret and the field. */
export function readKeySecret(secret: V1Secret | undefined, ref: string): KeySecretReading {
  if (!secret) return { problem: `Secret ${ref} does not exist (the leader creates it with a new key)`, missing: true };
  const type = secret.type ?? 'Opaque';
  if (!TYPES.includes(type))
    return { problem: `Secret ${ref} is of type ${type}; a signing key Secret is Opaque or kubernetes.io/tls`, missing: false };
  const currentPem = text(secret, CURRENT_KEY);
  if (currentPem === undefined || currentPem.trim() === '')
    return { problem: `Secret ${ref} has no ${CURRENT_KEY} (the current signing key, an RSA private key in PEM)`, missing: false };
  const field = (name: string, pem: string) => {
    try {
      return readSigningKey(pem);
    } catch (err) {
      if (err instanceof KeyProblem) return `Secret ${ref} field ${name} ${err.message}`;
      throw err;
    }
  };
  const current = field(CURRENT_KEY, currentPem);
  if (typeof current === 'string') return { problem: current, missing: false };
  const previousPem = text(secret, PREVIOUS_KEY);
  if (previousPem === undefined || previousPem.trim() === '') return { ring: { current }, currentPem };
  const previous = field(PREVIOUS_KEY, previousPem);
  if (typeof previous === 'string') return { problem: previous, missing: false };
  return { ring: { current, previous: previous.kid === current.kid ? undefined : previous }, currentPem };
}

/** The holder's next state: a good reading replaces the ring; a bad one keeps the last good ring and says why. */
export function stateAfter(last: SigningState, reading: KeySecretReading): Extract<SigningState, { unsigned: false }> {
  if (reading.problem === undefined) return { unsigned: false, ring: reading.ring, problem: undefined };
  return { unsigned: false, ring: last.unsigned ? undefined : last.ring, problem: reading.problem };
}

const b64 = (t: string): string => Buffer.from(t, 'utf8').toString('base64');

/** What the leader writes to a Secret it read well, and why; undefined when it is as it should be. */
export interface KeySecretWrite {
  readonly body: V1Secret;
  readonly action: 'rotated' | 'retired' | 'annotated';
}

/**
 * The leader's one update of a readable Secret: a new rotate value starts a rotation (tls.key = a new
 * key, previous.key = the old current, the value recorded) unless a previous key still signs (then it
 * waits for retirement); else the previous key goes once `retirementDue(currentKid)`; else the kid
 * annotations are brought up to date. Pure but for `generate`.
 */
export function plannedWrite(
  secret: V1Secret,
  reading: Extract<KeySecretReading, { ring: KeyRing }>,
  retirementDue: (currentKid: string) => boolean,
  generate: () => string,
): KeySecretWrite | undefined {
  const annotations = secret.metadata?.annotations ?? {};
  const { current, previous } = reading.ring;
  const rotate = annotations[ANNOTATION_ROTATE];
  const with_ = (data: Record<string, string>, notes: Record<string, string | undefined>): V1Secret => {
    const merged: Record<string, string> = { ...annotations };
    for (const [k, v] of Object.entries(notes)) {
      if (v === undefined) delete merged[k];
      else merged[k] = v;
    }
    return { ...secret, metadata: { ...secret.metadata, annotations: merged }, data };
  };
  if (rotate !== undefined && rotate !== '' && rotate !== annotations[ANNOTATION_ROTATED] && !previous) {
    const pem = generate();
    const next = readSigningKey(pem);
    const data = { ...(secret.data ?? {}), [CURRENT_KEY]: b64(pem), [PREVIOUS_KEY]: b64(reading.currentPem) };
    const notes = { [ANNOTATION_ROTATED]: rotate, [ANNOTATION_KEY_ID]: next.kid, [ANNOTATION_PREVIOUS_KEY_ID]: current.kid };
    return { body: with_(data, notes), action: 'rotated' };
  }
  if (previous && retirementDue(current.kid)) {
    const { [PREVIOUS_KEY]: _gone, ...data } = secret.data ?? {};
    return { body: with_(data, { [ANNOTATION_KEY_ID]: current.kid, [ANNOTATION_PREVIOUS_KEY_ID]: undefined }), action: 'retired' };
  }
  if (annotations[ANNOTATION_KEY_ID] !== current.kid || annotations[ANNOTATION_PREVIOUS_KEY_ID] !== previous?.kid) {
    const notes = { [ANNOTATION_KEY_ID]: current.kid, [ANNOTATION_PREVIOUS_KEY_ID]: previous?.kid };
    return { body: with_(secret.data ?? {}, notes), action: 'annotated' };
  }
  return undefined;
}

/** A new signing key Secret (Opaque), as the leader creates it when there is none. */
export function newKeySecret(namespace: string, name: string, pem: string): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY },
      annotations: { [ANNOTATION_KEY_ID]: readSigningKey(pem).kid },
    },
    data: { [CURRENT_KEY]: b64(pem) },
  };
}

export interface SigningKeySecretOptions {
  readonly core: CoreV1Api;
  readonly namespace: string;
  readonly name: string;
  readonly holder: SigningHolder;
  readonly log: Logger;
  /** Whether this replica leads: only the leader creates, rotates and retires. */
  readonly leading: () => boolean;
  /** Whether every agent of every bundle verifies with `currentKid` (then the previous key is retired). */
  readonly retirementDue: (currentKid: string) => boolean;
  /** How often the Secret is read again (default 5 s). */
  readonly refreshMs?: number;
  /** A new key's PEM (default generateSigningKeyPem: RSA 3072). */
  readonly generate?: () => string;
}

export interface SigningKeySecret {
  /** Reads the Secret now (and, as the leader, creates, rotates or retires); resolves when done, never rejects. */
  check(): Promise<void>;
  /** Reads it every refreshMs from now on. */
  start(): void;
  stop(): void;
}

/** Reads, creates, rotates and retires the signing key Secret; the holder follows what it holds. */
export function createSigningKeySecret(o: SigningKeySecretOptions): SigningKeySecret {
  const ref = `${o.namespace}/${o.name}`;
  const log = o.log.child({ secret: ref });
  const generate = o.generate ?? generateSigningKeyPem;
  let loggedProblem: string | undefined;
  let loggedError: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  const take = (reading: KeySecretReading): void => {
    const before = o.holder.get();
    const next = stateAfter(before, reading);
    if (next.problem !== undefined && next.problem !== loggedProblem) {
      log.warn({ problem: next.problem, signingWith: next.ring?.current.kid ?? null }, 'Rejected the signing key Secret');
    }
    loggedProblem = next.problem;
    if (!next.unsigned && next.ring && signingFingerprint(next) !== signingFingerprint(before) && next.problem === undefined)
      log.info({ kid: next.ring.current.kid, previousKid: next.ring.previous?.kid ?? null }, 'Read the signing keys');
    o.holder.set(next);
  };

  const read = async (): Promise<V1Secret | undefined> => {
    try {
      return await o.core.readNamespacedSecret({ name: o.name, namespace: o.namespace });
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  };

  /** One read, and the leader's one write; false when the write met a conflict (read again). */
  const once = async (): Promise<boolean> => {
    const secret = await read();
    const reading = readKeySecret(secret, ref);
    take(reading);
    if (!o.leading()) return true;
    if (!secret) {
      try {
        const created = await o.core.createNamespacedSecret({
          namespace: o.namespace,
          body: newKeySecret(o.namespace, o.name, generate()),
        });
        const after = readKeySecret(created, ref);
        log.info({ kid: after.problem === undefined ? after.ring.current.kid : null }, 'Created the signing key Secret with a new key');
        take(after);
        return true;
      } catch (err) {
        // 409: another replica created it first; read theirs.
        if (statusOf(err) === 409) return false;
        throw err;
      }
    }
    if (reading.problem !== undefined) return true;
    const write = plannedWrite(secret, reading, o.retirementDue, generate);
    if (!write) return true;
    try {
      const res = await o.core.replaceNamespacedSecret({ name: o.name, namespace: o.namespace, body: write.body });
      const after = readKeySecret(res, ref);
      const kids = after.problem === undefined ? { kid: after.ring.current.kid, previousKid: after.ring.previous?.kid ?? null } : {};
      if (write.action === 'rotated') log.info(kids, 'Started a signing key rotation');
      else if (write.action === 'retired')
        log.info({ ...kids, retiredKid: reading.ring.previous?.kid }, 'Retired the previous signing key');
      take(after);
      return true;
    } catch (err) {
      if (statusOf(err) === 409 || statusOf(err) === 404) return false;
      throw err;
    }
  };

  const pass = async (): Promise<void> => {
    try {
      for (let attempt = 1; attempt <= 3; attempt++) if (await once()) break;
      loggedError = undefined;
    } catch (err) {
      const message = describeError(err);
      if (message !== loggedError)
        log.warn({ err: message }, 'Failed to read or write the signing key Secret; the keys read last keep signing');
      loggedError = message;
    }
  };

  const check = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await pass();
      } while (again);
      running = undefined;
    })();
    return running;
  };

  return {
    check,
    start() {
      timer ??= setInterval(() => void check(), o.refreshMs ?? 5000);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
