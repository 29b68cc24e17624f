// The bundle signing key in Kubernetes mode: one Secret in the operator namespace (--signing-key-secret),
// read by every replica into the SigningHolder every few seconds and kept by the leader: created with a
// new key when missing (the first replica wins, the others read it), rotated when its
// `acl.policyagent.dev/rotate` annotation takes a new value, its previous key removed once every agent
// verifies with the current one (docs/kubernetes.md, "The signing key"). A Secret that cannot sign
// never empties the ring: the last good keys keep signing and `problem` says why (key-secret.ts).
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { signingFingerprint, type SigningHolder } from '../controller/index.ts';
import { coalesce } from '../work/index.ts';
import { describeError, statusOf } from './client.ts';
import {
  generateOffLoop,
  type KeySecretReading,
  newKeySecret,
  pendingRotation,
  plannedWrite,
  readKeySecret,
  stateAfter,
} from './key-secret.ts';

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
  /** A new key's PEM (default: RSA 3072, generated off the event loop). */
  readonly generate?: () => Promise<string>;
}

export interface SigningKeySecret {
  /** Reads the Secret now (and, as the leader, creates, rotates or retires); resolves when done, never rejects. */
  check(): Promise<void>;
  /** Reads it every refreshMs from now on. */
  start(): void;
  stop(): void;
}

/** One replica's keeper: its settings and what it has said already (each problem is logged once). */
interface Keeper {
  readonly o: SigningKeySecretOptions;
  readonly ref: string;
  readonly log: Logger;
  readonly generate: () => Promise<string>;
  loggedProblem: string | undefined;
  loggedError: string | undefined;
  loggedDeferred: string | undefined;
}

/** Hands a reading to the holder; a new problem and a new ring are logged (never a key). */
function take(k: Keeper, reading: KeySecretReading): void {
  const before = k.o.holder.get();
  const next = stateAfter(before, reading);
  if (next.problem !== undefined && next.problem !== k.loggedProblem)
    k.log.warn({ problem: next.problem, signingWith: next.ring?.current.kid ?? null }, 'Rejected the signing key Secret');
  k.loggedProblem = next.problem;
  if (next.ring && next.problem === undefined && signingFingerprint(next) !== signingFingerprint(before))
    k.log.info({ kid: next.ring.current.kid, previousKid: next.ring.previous?.kid ?? null }, 'Read the signing keys');
  k.o.holder.set(next);
}

async function read(k: Keeper): Promise<V1Secret | undefined> {
  try {
    return await k.o.core.readNamespacedSecret({ name: k.o.name, namespace: k.o.namespace });
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw err;
  }
}

/**
 * The leader creates the missing Secret: with a new key at the first start, or with the keys this
 * replica signs with when it was deleted by hand (a new key would leave every OPA unable to verify
 * the next revision); false when another replica created it first (read theirs).
 */
async function create(k: Keeper): Promise<boolean> {
  const { o } = k;
  const state = o.holder.get();
  const ring = state.unsigned ? undefined : state.ring;
  try {
    const body = newKeySecret(o.namespace, o.name, ring ?? (await k.generate()));
    const created = await o.core.createNamespacedSecret({ namespace: o.namespace, body });
    const after = readKeySecret(created, k.ref);
    const kid = after.problem === undefined ? after.ring.current.kid : null;
    if (ring)
      k.log.warn({ kid, previousKid: ring.previous?.kid ?? null }, 'Re-created the deleted signing key Secret with the keys that sign');
    else k.log.info({ kid }, 'Created the signing key Secret with a new key');
    take(k, after);
    return true;
  } catch (err) {
    if (statusOf(err) === 409) return false;
    throw err;
  }
}

/** The leader's one update of a Secret it reads well; false on a conflict (read it again). */
async function update(k: Keeper, secret: V1Secret, reading: Extract<KeySecretReading, { problem?: undefined }>): Promise<boolean> {
  const waiting = pendingRotation(secret);
  if (waiting !== undefined && reading.ring.previous && waiting !== k.loggedDeferred) {
    k.loggedDeferred = waiting;
    k.log.info(
      { rotate: waiting, previousKid: reading.ring.previous.kid },
      'Deferred a signing key rotation until the previous key is retired (at most two keys sign)',
    );
  }
  const write = await plannedWrite(secret, reading, k.o.retirementDue, k.generate);
  if (!write) return true;
  try {
    const res = await k.o.core.replaceNamespacedSecret({ name: k.o.name, namespace: k.o.namespace, body: write.body });
    const after = readKeySecret(res, k.ref);
    const kids = after.problem === undefined ? { kid: after.ring.current.kid, previousKid: after.ring.previous?.kid ?? null } : {};
    if (write.action === 'rotated') k.log.info(kids, 'Started a signing key rotation');
    else if (write.action === 'retired')
      k.log.info({ ...kids, retiredKid: reading.ring.previous?.kid }, 'Retired the previous signing key');
    take(k, after);
    return true;
  } catch (err) {
    if (statusOf(err) === 409 || statusOf(err) === 404) return false;
    throw err;
  }
}

/** One read, and the leader's one write; false when the write met a conflict. */
async function once(k: Keeper): Promise<boolean> {
  const secret = await read(k);
  const leading = k.o.leading();
  // A missing Secret is a problem only for a follower: the leader creates it now.
  if (!secret && leading) return create(k);
  const reading = readKeySecret(secret, k.ref);
  take(k, reading);
  if (!leading) return true;
  if (!secret) return true;
  if (reading.problem !== undefined) return true;
  return update(k, secret, reading);
}

/** Up to three rounds (a conflict reads the Secret again); a failure is logged once and the keys kept. */
async function pass(k: Keeper): Promise<void> {
  try {
    for (let attempt = 1; attempt <= 3; attempt++) if (await once(k)) break;
    k.loggedError = undefined;
  } catch (err) {
    const message = describeError(err);
    if (message !== k.loggedError)
      k.log.warn({ err: message }, 'Failed to read or write the signing key Secret; the keys read last keep signing');
    k.loggedError = message;
  }
}

/** Reads, creates, rotates and retires the signing key Secret; the holder follows what it holds. */
export function createSigningKeySecret(o: SigningKeySecretOptions): SigningKeySecret {
  const ref = `${o.namespace}/${o.name}`;
  const k: Keeper = {
    o,
    ref,
    log: o.log.child({ secret: ref }),
    generate: o.generate ?? generateOffLoop,
    loggedProblem: undefined,
    loggedError: undefined,
    loggedDeferred: undefined,
  };
  let timer: NodeJS.Timeout | undefined;
  // Checks asked for while one runs collapse into one more pass after it.
  const check = coalesce(() => pass(k));
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
