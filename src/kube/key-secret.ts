// What the signing key Secret holds and what the leader writes to it, as values: its shape (type, the
// fields tls.key and previous.key, the annotations that start a rotation and name the kids), read into
// a ring or a problem naming the Secret and the field, and the one update a rotation, a retirement or
// a stale annotation calls for. The loop that reads and writes it is signing-key.ts.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { V1Secret } from '@kubernetes/client-node';
import type { SigningState } from '../controller/index.ts';
import { GENERATED_RSA_BITS, KeyProblem, readSigningKey, type KeyRing, type SigningKey } from '../signing/index.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from './client.ts';

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
  | {
      readonly problem: string;
      readonly missing: boolean;
      /** A good tls.key beside a broken previous.key: what a replica with no last good ring signs with. */
      readonly current?: SigningKey;
    };

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
  if (typeof previous === 'string') return { problem: previous, missing: false, current };
  return { ring: { current, previous: previous.kid === current.kid ? undefined : previous }, currentPem };
}

/**
 * The holder's next state: a good reading replaces the ring; a bad one keeps the last good ring and
 * says why (with none, a good tls.key signs alone, as standalone's current.pem does).
 */
export function stateAfter(last: SigningState, reading: KeySecretReading): Extract<SigningState, { unsigned: false }> {
  if (reading.problem === undefined) return { unsigned: false, ring: reading.ring, problem: undefined };
  const lastRing = last.unsigned ? undefined : last.ring;
  return { unsigned: false, ring: lastRing ?? (reading.current ? { current: reading.current } : undefined), problem: reading.problem };
}

const b64 = (t: string): string => Buffer.from(t, 'utf8').toString('base64');

/**
 * A new key as generateSigningKeyPem makes it (RSA, PKCS#8 PEM), generated off the event loop: an
 * RSA 3072 key takes 130 to 280 ms, which decisions would otherwise wait for.
 */
export async function generateOffLoop(): Promise<string> {
  const { privateKey } = await promisify(generateKeyPair)('rsa', { modulusLength: GENERATED_RSA_BITS });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** What the leader writes to a Secret it read well, and why; undefined when it is as it should be. */
export interface KeySecretWrite {
  readonly body: V1Secret;
  readonly action: 'rotated' | 'retired' | 'annotated';
}

/** The rotate value a rotation should start for now: new (not yet handled) and non-empty. */
export function pendingRotation(secret: V1Secret): string | undefined {
  const annotations = secret.metadata?.annotations ?? {};
  const rotate = annotations[ANNOTATION_ROTATE];
  return rotate !== undefined && rotate !== '' && rotate !== annotations[ANNOTATION_ROTATED] ? rotate : undefined;
}

/**
 * The leader's one update of a readable Secret: a new rotate value starts a rotation (tls.key = a new
 * key, previous.key = the old current, the value recorded) unless a previous key still signs (then it
 * waits for retirement); else the previous key goes once `retirementDue(currentKid)`; else the kid
 * annotations are brought up to date. Pure but for `generate`.
 */
export async function plannedWrite(
  secret: V1Secret,
  reading: Extract<KeySecretReading, { ring: KeyRing }>,
  retirementDue: (currentKid: string) => boolean,
  generate: () => Promise<string>,
): Promise<KeySecretWrite | undefined> {
  const annotations = secret.metadata?.annotations ?? {};
  const { current, previous } = reading.ring;
  const rotate = pendingRotation(secret);
  const with_ = (data: Record<string, string>, notes: Record<string, string | undefined>): V1Secret => {
    const merged: Record<string, string> = { ...annotations };
    for (const [k, v] of Object.entries(notes)) {
      if (v === undefined) delete merged[k];
      else merged[k] = v;
    }
    return { ...secret, metadata: { ...secret.metadata, annotations: merged }, data };
  };
  if (rotate !== undefined && !previous) {
    const pem = await generate();
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

/**
 * A signing key Secret (Opaque) as the leader creates it when there is none: with a new key, or with
 * the ring this replica still signs with (the Secret was deleted by hand: OPAs keep verifying).
 */
export function newKeySecret(namespace: string, name: string, keys: string | KeyRing): V1Secret {
  const pem = (k: KeyRing['current']): string => k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const current = typeof keys === 'string' ? keys : pem(keys.current);
  const previous = typeof keys === 'string' || !keys.previous ? undefined : keys.previous;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY },
      annotations: {
        [ANNOTATION_KEY_ID]: readSigningKey(current).kid,
        ...(previous ? { [ANNOTATION_PREVIOUS_KEY_ID]: previous.kid } : {}),
      },
    },
    data: { [CURRENT_KEY]: b64(current), ...(previous ? { [PREVIOUS_KEY]: b64(pem(previous)) } : {}) },
  };
}
