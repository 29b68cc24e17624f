// Connector → its token Secret (issued, rotated, revoked) and the entry the bundle route checks,
// and status: phase, the token Secret, the bundles it serves and conditions.
import type { Logger } from 'pino';
import { checkSpec } from '../admission/index.ts';
import { Connector, type ConnectorSpec, ConnectorStatus, readStatus } from '../api/index.ts';
import { hashToken } from '../auth/index.ts';
import { conditionsFor, readyIn, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { ensureTokenSecret } from './token.ts';
import { keyText, tokenSecretName, TokenSecretConflict, type ObjectKey, type SourceObject, type TokenSecret } from './types.ts';

/** A Connector as one reconcile sees it: the object, its status as recorded (read once), its bundles. */
interface Seen {
  readonly obj: SourceObject;
  readonly namespace: string;
  readonly name: string;
  readonly generation: number;
  readonly previous: ConnectorStatus;
  /** The bundles configured for this connector (built or not): a restart writes the right list at once. */
  readonly bundles: string[];
  /** Whether the store held an entry for it before this reconcile. */
  readonly existed: boolean;
  readonly log: Logger;
}

/** Bundles naming this connector say in their status whether it exists: tell them when that changes. */
function bundlesOf(deps: ReconcileDeps, namespace: string, name: string): ObjectKey[] {
  return deps.objects
    .list('Bundle', namespace)
    .filter((b) => {
      const spec = b.raw['spec'];
      return typeof spec === 'object' && spec !== null && 'connector' in spec && spec.connector === name;
    })
    .map((b) => ({ kind: 'Bundle', namespace, name: b.metadata.name }));
}

export async function reconcileConnector(key: ObjectKey, deps: ReconcileDeps): Promise<Outcome> {
  const { namespace, name } = key;
  const log = deps.log.child({ kind: 'Connector', key: keyText(key) });
  const obj = deps.objects.get('Connector', namespace, name);
  const existed = deps.draft.connector(namespace, name) !== undefined;
  if (!obj) {
    deps.draft.setConnector(namespace, name, undefined);
    await deps.writer.deleteTokenSecret(namespace, name);
    return existed ? { enqueue: bundlesOf(deps, namespace, name) } : {};
  }
  const seen: Seen = {
    obj,
    namespace,
    name,
    generation: obj.metadata.generation ?? 0,
    previous: readStatus(ConnectorStatus, obj.raw['status']),
    bundles: bundlesOf(deps, namespace, name)
      .map((k) => k.name)
      .sort(),
    existed,
    log,
  };
  const parsed = checkSpec(Connector, obj.raw);
  if (!parsed.ok) return reject(seen, deps, parsed.problem.message);
  const spec = parsed.object.spec;
  let secret = deps.writer.readTokenSecret(namespace, name);
  if (deps.leading()) {
    try {
      secret = await ensureTokenSecret({ obj, spec, secret, deps, log });
    } catch (err) {
      if (!(err instanceof TokenSecretConflict)) throw err;
      return secretConflict(seen, deps, err.message);
    }
  }
  return serve(seen, spec, secret, deps);
}

/**
 * The last good entry stays in the store: polling OPAs keep working until it is fixed. After a
 * restart it is rebuilt from the token Secret and the Active condition last written to status
 * (no such condition: Inactive, so an invalid edit never opens a connector that was closed).
 */
function reject(seen: Seen, deps: ReconcileDeps, message: string): Outcome {
  const { namespace, name, previous, generation } = seen;
  seen.log.warn({ problem: message }, 'Rejected Connector');
  const kept = (previous.conditions ?? []).filter((c) => c.type === 'Active' || c.type === 'TokenIssued');
  if (!seen.existed) {
    const secret = deps.writer.readTokenSecret(namespace, name);
    if (secret?.token !== undefined) {
      const active = kept.some((c) => c.type === 'Active' && c.status === 'True');
      deps.draft.setConnector(namespace, name, { tenant: namespace, name, active, tokenHash: hashToken(secret.token) });
    }
  }
  const invalid: ConditionInput = { type: 'Ready', status: false, reason: 'InvalidSpec', message };
  return {
    phase: 'Invalid',
    status: {
      ...(previous.tokenIssuedAt ? { tokenIssuedAt: previous.tokenIssuedAt } : {}),
      phase: 'Invalid',
      observedGeneration: generation,
      tokenSecretName: tokenSecretName(name),
      bundles: seen.bundles,
      conditions: [...conditionsFor([invalid], generation, deps.now(), previous.conditions), ...kept],
    },
  };
}

/** Someone else's Secret has the token Secret's name: nothing is written, and no token opens the bundles. */
function secretConflict(seen: Seen, deps: ReconcileDeps, message: string): Outcome {
  const { namespace, name, generation } = seen;
  seen.log.warn({ problem: message }, 'Token Secret name taken');
  deps.draft.setConnector(namespace, name, { tenant: namespace, name, active: false, tokenHash: undefined });
  if (readyIn(seen.previous.conditions)?.reason !== 'SecretConflict') {
    deps.writer.recordEvent?.(seen.obj, { type: 'Warning', reason: 'SecretConflict', message });
  }
  const conditions: ConditionInput[] = [
    { type: 'Ready', status: false, reason: 'SecretConflict', message },
    { type: 'TokenIssued', status: false, reason: 'SecretConflict', message },
    { type: 'Active', status: false, reason: 'SecretConflict', message: 'Bundles are not served' },
  ];
  return {
    phase: 'Inactive',
    ...(seen.existed ? {} : { enqueue: bundlesOf(deps, namespace, name) }),
    status: {
      phase: 'Inactive',
      observedGeneration: generation,
      tokenSecretName: tokenSecretName(name),
      bundles: seen.bundles,
      conditions: conditionsFor(conditions, generation, deps.now(), seen.previous.conditions),
    },
  };
}

/** A valid Connector: its entry in the store, and the status that says whether and to whom it serves. */
function serve(seen: Seen, spec: ConnectorSpec, secret: TokenSecret | undefined, deps: ReconcileDeps): Outcome {
  const { namespace, name } = seen;
  // A follower accepts only the token issued for the current spec: after a rotation or revocation
  // the old token is refused at once, before the leader's new Secret arrives.
  const token = !spec.revoked && secret?.rotation === spec.tokenRotation ? secret.token : undefined;
  const active = spec.active && !spec.revoked;
  deps.draft.setConnector(namespace, name, {
    tenant: namespace,
    name,
    active,
    tokenHash: token === undefined ? undefined : hashToken(token),
  });
  const phase = active ? 'Active' : 'Inactive';
  return {
    phase,
    ...(seen.existed ? {} : { enqueue: bundlesOf(deps, namespace, name) }),
    status: {
      phase,
      observedGeneration: seen.generation,
      tokenSecretName: tokenSecretName(name),
      ...(secret ? { tokenIssuedAt: secret.issuedAt } : {}),
      bundles: seen.bundles,
      conditions: conditionsFor(servingConditions(seen, spec, secret, token), seen.generation, deps.now(), seen.previous.conditions),
    },
  };
}

/** Ready, TokenIssued and Active of a valid Connector. */
function servingConditions(seen: Seen, spec: ConnectorSpec, secret: TokenSecret | undefined, token: string | undefined): ConditionInput[] {
  const active = spec.active && !spec.revoked;
  const secretName = tokenSecretName(seen.name);
  const ready: ConditionInput = active
    ? {
        type: 'Ready',
        status: true,
        reason: 'Active',
        message: `Serving ${seen.bundles.length} bundle(s) to holders of the token in Secret ${secretName}`,
      }
    : spec.revoked
      ? {
          type: 'Ready',
          status: false,
          reason: 'Revoked',
          message: 'The token is revoked: every poller gets 401. Set revoked: false to issue a new token.',
        }
      : { type: 'Ready', status: false, reason: 'Disabled', message: 'spec.active is false: a valid token gets 403' };
  const issued: ConditionInput =
    token === undefined || secret === undefined
      ? { type: 'TokenIssued', status: false, reason: 'Revoked', message: 'No valid token' }
      : {
          type: 'TokenIssued',
          status: true,
          reason: 'TokenIssued',
          message: `Token for rotation ${secret.rotation} is in Secret ${secretName}, key token`,
        };
  // Active says whether the bundles are served; an invalid edit keeps it as it was.
  const serving: ConditionInput = {
    type: 'Active',
    status: active,
    reason: ready.reason,
    message: active ? 'Bundles are served to holders of the token' : 'Bundles are not served',
  };
  return [ready, issued, serving];
}
