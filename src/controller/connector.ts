// Connector → its token Secret (issued, rotated, revoked) and the entry the bundle route checks.
import { Connector, type Condition } from '../api/index.ts';
import { describeIssues } from '../api/manifests.ts';
import { generateToken, hashToken } from '../auth/index.ts';
import { conditionsFor, kubeTime, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { keyText, tokenSecretName, TokenSecretConflict, type ObjectKey, type TokenSecret } from './types.ts';

export async function reconcileConnector(key: ObjectKey, deps: ReconcileDeps): Promise<Outcome> {
  const { namespace, name } = key;
  const log = deps.log.child({ kind: 'Connector', key: keyText(key) });
  const obj = deps.objects.get('Connector', namespace, name);
  // Bundles naming this connector say in their status whether it exists: tell them when that changes.
  const bundlesOfIt = (): ObjectKey[] =>
    deps.objects
      .list('Bundle', namespace)
      .filter((b) => (b.raw['spec'] as { connector?: unknown } | undefined)?.connector === name)
      .map((b) => ({ kind: 'Bundle', namespace, name: b.metadata.name }));
  const existed = deps.draft.connector(namespace, name) !== undefined;
  if (!obj) {
    deps.draft.setConnector(namespace, name, undefined);
    await deps.writer.deleteTokenSecret(namespace, name);
    return existed ? { enqueue: bundlesOfIt() } : {};
  }
  const generation = obj.metadata.generation ?? 0;
  const recordedStatus = obj.raw['status'] as { conditions?: unknown; tokenIssuedAt?: unknown } | undefined;
  const previousConditions = recordedStatus?.conditions;
  // The bundles configured for this connector (built or not): a restart writes the right list at once.
  const bundles = bundlesOfIt()
    .map((k) => k.name)
    .sort();
  const parsed = Connector.safeParse(obj.raw);
  if (!parsed.success) {
    // The last good entry stays in the store: polling OPAs keep working until it is fixed. After a
    // restart it is rebuilt from the token Secret and the Active condition last written to status
    // (no such condition: Inactive, so an invalid edit never opens a connector that was closed).
    const message = describeIssues(parsed.error);
    log.warn({ problem: message }, 'Rejected Connector');
    const kept = (Array.isArray(previousConditions) ? (previousConditions as Condition[]) : []).filter(
      (c) => c.type === 'Active' || c.type === 'TokenIssued',
    );
    if (!existed) {
      const secret = deps.writer.readTokenSecret(namespace, name);
      if (secret?.token !== undefined) {
        const active = kept.some((c) => c.type === 'Active' && c.status === 'True');
        deps.draft.setConnector(namespace, name, { tenant: namespace, name, active, tokenHash: hashToken(secret.token) });
      }
    }
    return {
      phase: 'Invalid',
      status: {
        ...(recordedStatus?.tokenIssuedAt ? { tokenIssuedAt: recordedStatus.tokenIssuedAt } : {}),
        phase: 'Invalid',
        observedGeneration: generation,
        tokenSecretName: tokenSecretName(name),
        bundles,
        conditions: [
          ...conditionsFor([{ type: 'Ready', status: false, reason: 'InvalidSpec', message }], generation, deps.now(), previousConditions),
          ...kept,
        ],
      },
    };
  }
  const spec = parsed.data.spec;
  let secret: TokenSecret | undefined = deps.writer.readTokenSecret(namespace, name);
  if (deps.leading()) {
    try {
      if (spec.revoked) {
        if (secret === undefined || secret.token !== undefined) {
          secret = { token: undefined, rotation: spec.tokenRotation, issuedAt: secret?.issuedAt ?? kubeTime(deps.now()) };
          await deps.writer.writeTokenSecret(obj, secret);
          log.info({ rotation: spec.tokenRotation }, 'Revoked connector token');
          deps.writer.recordEvent?.(obj, {
            type: 'Normal',
            reason: 'TokenRevoked',
            message: `The token in Secret ${tokenSecretName(name)} was removed: every poller gets 401`,
          });
        }
      } else if (secret === undefined || secret.token === undefined || secret.rotation !== spec.tokenRotation) {
        const reason = secret === undefined ? 'created' : secret.token === undefined ? 'reactivated' : 'rotated';
        secret = { token: generateToken(deps.random), rotation: spec.tokenRotation, issuedAt: kubeTime(deps.now()) };
        await deps.writer.writeTokenSecret(obj, secret);
        log.info({ rotation: spec.tokenRotation, reason, secret: tokenSecretName(name) }, 'Issued connector token');
        deps.writer.recordEvent?.(obj, {
          type: 'Normal',
          reason: reason === 'rotated' ? 'TokenRotated' : 'TokenIssued',
          message: `${reason === 'rotated' ? 'A new token replaced the old one' : 'A token was issued'} in Secret ${tokenSecretName(name)} (rotation ${spec.tokenRotation})`,
        });
      }
    } catch (err) {
      if (!(err instanceof TokenSecretConflict)) throw err;
      // Someone else's Secret has the name: nothing is written, and no token opens the bundles.
      log.warn({ problem: err.message }, 'Token Secret name taken');
      deps.draft.setConnector(namespace, name, { tenant: namespace, name, active: false, tokenHash: undefined });
      const conflict: ConditionInput = { type: 'Ready', status: false, reason: 'SecretConflict', message: err.message };
      if ((previousConditions as Condition[] | undefined)?.find?.((c) => c.type === 'Ready')?.reason !== 'SecretConflict') {
        deps.writer.recordEvent?.(obj, { type: 'Warning', reason: 'SecretConflict', message: err.message });
      }
      return {
        phase: 'Inactive',
        ...(existed ? {} : { enqueue: bundlesOfIt() }),
        status: {
          phase: 'Inactive',
          observedGeneration: generation,
          tokenSecretName: tokenSecretName(name),
          bundles,
          conditions: conditionsFor(
            [
              conflict,
              { type: 'TokenIssued', status: false, reason: 'SecretConflict', message: err.message },
              { type: 'Active', status: false, reason: 'SecretConflict', message: 'Bundles are not served' },
            ],
            generation,
            deps.now(),
            previousConditions,
          ),
        },
      };
    }
  }
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
  const ready: ConditionInput = active
    ? {
        type: 'Ready',
        status: true,
        reason: 'Active',
        message: `Serving ${bundles.length} bundle(s) to holders of the token in Secret ${tokenSecretName(name)}`,
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
          message: `Token for rotation ${secret.rotation} is in Secret ${tokenSecretName(name)}, key token`,
        };
  // Active says whether the bundles are served; an invalid edit keeps it as it was.
  const serving: ConditionInput = {
    type: 'Active',
    status: active,
    reason: ready.reason,
    message: active ? 'Bundles are served to holders of the token' : 'Bundles are not served',
  };
  const phase = active ? 'Active' : 'Inactive';
  return {
    phase,
    ...(existed ? {} : { enqueue: bundlesOfIt() }),
    status: {
      phase,
      observedGeneration: generation,
      tokenSecretName: tokenSecretName(name),
      ...(secret ? { tokenIssuedAt: secret.issuedAt } : {}),
      bundles,
      conditions: conditionsFor([ready, issued, serving], generation, deps.now(), previousConditions),
    },
  };
}
