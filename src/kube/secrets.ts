// Token Secrets, in and out: reading a connector's token back for the controller, the Secret this
// operator writes for it (token and CA, owned by the Connector), a write that never answers a
// conflict with a stale body nor touches a Secret that is not ours, and copying a new CA into all.
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION } from '../api/index.ts';
import {
  ANNOTATION_ISSUED_AT,
  ANNOTATION_ROTATION,
  LABEL_CONNECTOR,
  tokenSecretName,
  TokenSecretConflict,
  type SourceObject,
  type TokenSecret,
} from '../controller/index.ts';
import { currentToken, getObject, slot, tokenRecord, type KubeCache } from './cache.ts';
import { describeError, LABEL_MANAGED_BY, MANAGED_BY, statusOf, type KubeClients } from './client.ts';

/** Key of the CA certificate in token Secrets: OPA's `ca_cert` reads it from the same volume. */
const CA_KEY = 'ca.crt';

export interface SecretsOptions {
  readonly clients: KubeClients;
  readonly log: Logger;
  /** The CA OPAs should trust, copied into token Secrets. */
  readonly caBundle?: () => string | undefined;
}

/** A connector's token Secret decoded, or undefined when there is none or it belongs to an earlier Connector. */
export function readTokenSecret(cache: KubeCache, namespace: string, connector: string): TokenSecret | undefined {
  const record = currentToken(cache, namespace, connector);
  if (!record) return undefined;
  // A Secret left by an earlier Connector of the same name (not yet collected) is not this one's.
  const uid = getObject(cache, 'Connector', namespace, connector)?.metadata.uid;
  if (uid !== undefined && record.ownerUids.length > 0 && !record.ownerUids.includes(uid)) return undefined;
  const encoded = record.data['token'];
  const token = encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8').trim() || undefined;
  const rotation = Number(record.annotations[ANNOTATION_ROTATION]);
  return {
    token,
    // An unreadable annotation never matches a spec: a fresh token is issued.
    rotation: Number.isInteger(rotation) ? rotation : -1,
    issuedAt: record.annotations[ANNOTATION_ISSUED_AT] ?? '',
  };
}

function secretBody(
  owner: SourceObject,
  secret: TokenSecret,
  resourceVersion: string | undefined,
  caBundle: (() => string | undefined) | undefined,
): V1Secret {
  const { namespace, name, uid } = owner.metadata;
  if (uid === undefined) throw new Error(`Connector ${namespace}/${name} has no uid: cannot own its token Secret`);
  const ca = caBundle?.();
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: tokenSecretName(name),
      namespace,
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
      labels: { [LABEL_CONNECTOR]: name, [LABEL_MANAGED_BY]: MANAGED_BY },
      annotations: { [ANNOTATION_ROTATION]: String(secret.rotation), [ANNOTATION_ISSUED_AT]: secret.issuedAt },
      // Garbage-collected with its Connector. No blockOwnerDeletion: that would need finalizer rights on Connectors.
      ownerReferences: [{ apiVersion: API_VERSION, kind: 'Connector', name, uid, controller: true }],
    },
    data: {
      ...(secret.token === undefined ? {} : { token: Buffer.from(secret.token, 'utf8').toString('base64') }),
      ...(ca === undefined ? {} : { [CA_KEY]: Buffer.from(ca, 'utf8').toString('base64') }),
    },
  };
}

/** Whether a Secret is a token Secret this operator manages for `connector`. */
function isOurs(secret: V1Secret, connector: string): boolean {
  return secret.metadata?.labels?.[LABEL_CONNECTOR] === connector;
}

/**
 * After a write answered 409 or 404: remembers the Secret as it is now and throws, so the controller
 * decides again from it; a Secret of that name that is not ours is reported and left alone.
 */
async function afterConflict(options: SecretsOptions, cache: KubeCache, namespace: string, connector: string): Promise<never> {
  const name = tokenSecretName(connector);
  const id = slot(namespace, connector);
  let fresh: V1Secret | undefined;
  try {
    fresh = await options.clients.core.readNamespacedSecret({ name, namespace });
  } catch (readErr) {
    if (statusOf(readErr) !== 404) throw new Error(`Failed to read Secret ${namespace}/${name}: ${describeError(readErr)}`);
  }
  if (fresh && !isOurs(fresh, connector)) {
    throw new TokenSecretConflict(
      `Secret ${name} already exists and is not a token Secret of this connector (no label ${LABEL_CONNECTOR}: ${connector}); it is left alone. Delete or rename it, or rename the Connector.`,
    );
  }
  if (fresh) cache.written.set(id, tokenRecord(fresh));
  else {
    cache.written.delete(id);
    cache.tokens.delete(id);
  }
  throw new Error(`Secret ${namespace}/${name} changed while it was written; deciding again from the current one`);
}

/**
 * Creates or replaces a connector's token Secret. A conflict is never answered by writing the same
 * body again (it was computed from what is now stale): the fresh Secret is remembered and the
 * reconcile fails, so the controller decides again from it. A Secret of that name that is not ours is left alone.
 */
export async function writeTokenSecret(options: SecretsOptions, cache: KubeCache, owner: SourceObject, secret: TokenSecret): Promise<void> {
  const { namespace, name: connector } = owner.metadata;
  const known = currentToken(cache, namespace, connector);
  const name = tokenSecretName(connector);
  const body = (resourceVersion: string | undefined): V1Secret => secretBody(owner, secret, resourceVersion, options.caBundle);
  try {
    const res = known
      ? await options.clients.core.replaceNamespacedSecret({ name, namespace, body: body(known.resourceVersion) })
      : await options.clients.core.createNamespacedSecret({ namespace, body: body(undefined) });
    cache.written.set(slot(namespace, connector), tokenRecord(res));
    return;
  } catch (err) {
    const status = statusOf(err);
    if (status !== 409 && status !== 404) throw new Error(`Failed to write Secret ${namespace}/${name}: ${describeError(err)}`);
  }
  await afterConflict(options, cache, namespace, connector);
}

/** Writes `encoded` as the CA of one token Secret, on the Secret as the server holds it now (3 tries on conflicts). */
async function writeCa(options: SecretsOptions, cache: KubeCache, id: string, encoded: string): Promise<void> {
  const { clients, log } = options;
  const [namespace, connector] = id.split('/') as [string, string];
  const name = tokenSecretName(connector);
  // Only ca.crt changes, on the Secret as the server holds it now: a token is never written back.
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      const fresh = await clients.core.readNamespacedSecret({ name, namespace });
      if (!isOurs(fresh, connector) || fresh.data?.[CA_KEY] === encoded) break;
      const res = await clients.core.replaceNamespacedSecret({
        name,
        namespace,
        body: { ...fresh, data: { ...(fresh.data ?? {}), [CA_KEY]: encoded } },
      });
      cache.written.set(id, tokenRecord(res));
      log.info({ secret: `${namespace}/${name}` }, 'Wrote the current CA into a token Secret');
      break;
    } catch (err) {
      if (statusOf(err) === 404) break;
      if (statusOf(err) !== 409 || attempt === 3)
        throw new Error(`Failed to write the CA into Secret ${namespace}/${name}: ${describeError(err)}`);
    }
  }
}

/** Writes the current CA into every token Secret that holds another one (leader only). */
export async function syncCa(options: SecretsOptions, cache: KubeCache): Promise<void> {
  const ca = options.caBundle?.();
  if (ca === undefined) return;
  const encoded = Buffer.from(ca, 'utf8').toString('base64');
  for (const id of new Set([...cache.tokens.keys(), ...cache.written.keys()])) {
    if ((cache.written.get(id) ?? cache.tokens.get(id))?.data[CA_KEY] === encoded) continue;
    await writeCa(options, cache, id, encoded);
  }
}
