// A Connector's token Secret as the leader keeps it: issued, rotated with spec.tokenRotation, and
// emptied when the connector is revoked.
import type { Logger } from 'pino';
import type { ConnectorSpec } from '../api/index.ts';
import { generateToken } from '../auth/index.ts';
import { kubeTime } from './conditions.ts';
import type { ReconcileDeps } from './deps.ts';
import { tokenSecretName, type SourceObject, type TokenSecret } from './types.ts';

/** What a token change works on: the Connector, its valid spec, and its Secret as it was read. */
interface TokenWork {
  readonly obj: SourceObject;
  readonly spec: ConnectorSpec;
  readonly secret: TokenSecret | undefined;
  readonly deps: ReconcileDeps;
  readonly log: Logger;
}

/**
 * Makes the token Secret match the spec and returns it as it now is (revoked: no token; otherwise a
 * token for spec.tokenRotation). Throws TokenSecretConflict when someone else's Secret has its name.
 */
export async function ensureTokenSecret(work: TokenWork): Promise<TokenSecret | undefined> {
  const { spec, secret } = work;
  if (spec.revoked) return secret === undefined || secret.token !== undefined ? revoke(work) : secret;
  if (secret === undefined || secret.token === undefined || secret.rotation !== spec.tokenRotation) return issue(work);
  return secret;
}

/** Writes the Secret without a token: every poller gets 401 from now on. */
async function revoke({ obj, spec, secret, deps, log }: TokenWork): Promise<TokenSecret> {
  const revoked: TokenSecret = { token: undefined, rotation: spec.tokenRotation, issuedAt: secret?.issuedAt ?? kubeTime(deps.now()) };
  await deps.writer.writeTokenSecret(obj, revoked);
  log.info({ rotation: spec.tokenRotation }, 'Revoked connector token');
  deps.writer.recordEvent?.(obj, {
    type: 'Normal',
    reason: 'TokenRevoked',
    message: `The token in Secret ${tokenSecretName(obj.metadata.name)} was removed: every poller gets 401`,
  });
  return revoked;
}

/** Writes a new token: the first one, one after a revocation, or one for a raised tokenRotation. */
async function issue({ obj, spec, secret, deps, log }: TokenWork): Promise<TokenSecret> {
  const name = tokenSecretName(obj.metadata.name);
  const reason = secret === undefined ? 'created' : secret.token === undefined ? 'reactivated' : 'rotated';
  const issued: TokenSecret = { token: generateToken(deps.random), rotation: spec.tokenRotation, issuedAt: kubeTime(deps.now()) };
  await deps.writer.writeTokenSecret(obj, issued);
  log.info({ rotation: spec.tokenRotation, reason, secret: name }, 'Issued connector token');
  deps.writer.recordEvent?.(obj, {
    type: 'Normal',
    reason: reason === 'rotated' ? 'TokenRotated' : 'TokenIssued',
    message: `${reason === 'rotated' ? 'A new token replaced the old one' : 'A token was issued'} in Secret ${name} (rotation ${spec.tokenRotation})`,
  });
  return issued;
}
