// secrets/<ns>/<connector>-token.yaml and tokens/<ns>/<connector> of the state folder: each
// connector's token Secret (v1, as the API server would hold it) and its bare token (mode 0600, for
// OPA's token_path), kept in step so OPA and the next start both see the token that was issued.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { API_VERSION } from '../api/index.ts';
import {
  ANNOTATION_ISSUED_AT,
  ANNOTATION_ROTATION,
  LABEL_CONNECTOR,
  secretToken,
  tokenSecretName,
  type SourceObject,
  type TokenSecret,
} from '../controller/index.ts';
import { readTextOrUndefined, readYamlFiles, type StateFiles, writeAtomic } from './files.ts';
import { isObject } from '../api/index.ts';

/** The token Secrets of a state folder: in memory, the text last written, and the serial writer of their files. */
export interface TokenFiles extends StateFiles {
  /** By `<ns>/<connector>`. */
  readonly secrets: Map<string, TokenSecret>;
  /** The Secret file's text as last written this run, by `<ns>/<connector>` (for repairTokens). */
  readonly secretTexts: Map<string, string>;
}

/** `<state-dir>/tokens/<ns>/<connector>`: the bare token OPA's token_path reads. */
export const tokenFile = (dir: string, namespace: string, connector: string): string => join(dir, 'tokens', namespace, connector);

const secretFile = (dir: string, namespace: string, connector: string): string =>
  join(dir, 'secrets', namespace, `${tokenSecretName(connector)}.yaml`);

/** Makes the token file hold `token` (removed when undefined), writing only when it differs. */
async function syncTokenFile(t: TokenFiles, namespace: string, connector: string, token: string | undefined): Promise<void> {
  const tf = tokenFile(t.dir, namespace, connector);
  const current = await readTextOrUndefined(tf);
  if (current === token) return;
  await t.serial(tf, () => (token === undefined ? rm(tf, { force: true }) : writeAtomic(tf, token, 0o600)));
}

/** Reads every token Secret file into `t`, and repairs the token files from them. */
export async function loadTokenSecrets(t: TokenFiles): Promise<void> {
  for (const doc of await readYamlFiles(join(t.dir, 'secrets'))) {
    if (!isObject(doc) || !isObject(doc['metadata'])) continue;
    const m = doc['metadata'];
    const labels = isObject(m['labels']) ? m['labels'] : {};
    const annotations = isObject(m['annotations']) ? m['annotations'] : {};
    const connector = labels[LABEL_CONNECTOR];
    if (typeof connector !== 'string') continue;
    const token = secretToken(doc);
    const namespace = String(m['namespace']);
    t.secretTexts.set(`${namespace}/${connector}`, stringify(doc));
    t.secrets.set(`${namespace}/${connector}`, {
      token: token === '' ? undefined : token,
      rotation: Number(annotations[ANNOTATION_ROTATION] ?? 0),
      issuedAt: String(annotations[ANNOTATION_ISSUED_AT] ?? ''),
    });
    // The Secret is the truth; a token file left behind by a crash between the two writes is repaired.
    await syncTokenFile(t, namespace, connector, token === '' ? undefined : token);
  }
}

/** The v1 Secret holding a connector's token, owned by the connector. */
function tokenSecretDocument(owner: SourceObject, secret: TokenSecret): Record<string, unknown> {
  const { namespace, name: connector } = owner.metadata;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: tokenSecretName(connector),
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'acl-operator', [LABEL_CONNECTOR]: connector },
      annotations: { [ANNOTATION_ROTATION]: String(secret.rotation), [ANNOTATION_ISSUED_AT]: secret.issuedAt },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: 'Connector',
          name: connector,
          uid: owner.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    data: secret.token === undefined ? {} : { token: Buffer.from(secret.token, 'utf8').toString('base64') },
  };
}

/** Writes the connector's token Secret and token file, and only then remembers the Secret. */
export async function writeTokenSecret(t: TokenFiles, owner: SourceObject, secret: TokenSecret): Promise<void> {
  const { namespace, name: connector } = owner.metadata;
  const file = secretFile(t.dir, namespace, connector);
  const text = stringify(tokenSecretDocument(owner, secret));
  await t.serial(file, () => writeAtomic(file, text, 0o600));
  t.secretTexts.set(`${namespace}/${connector}`, text);
  await syncTokenFile(t, namespace, connector, secret.token);
  // Only once both files hold it: a failed write is retried with a fresh token, never half-issued.
  t.secrets.set(`${namespace}/${connector}`, secret);
}

/** Forgets the connector's token Secret and removes both its files (nothing to do when none was remembered). */
export async function deleteTokenSecret(t: TokenFiles, namespace: string, connector: string): Promise<void> {
  t.secretTexts.delete(`${namespace}/${connector}`);
  if (!t.secrets.delete(`${namespace}/${connector}`)) return;
  const file = secretFile(t.dir, namespace, connector);
  const tf = tokenFile(t.dir, namespace, connector);
  await t.serial(file, () => rm(file, { force: true }));
  await t.serial(tf, () => rm(tf, { force: true }));
}

/** Puts back the Secret files and token files that went missing or changed; returns the files written. */
export async function repairTokens(t: TokenFiles): Promise<string[]> {
  const written: string[] = [];
  for (const [key, secret] of t.secrets) {
    const [namespace, connector] = key.split('/') as [string, string];
    const file = secretFile(t.dir, namespace, connector);
    const text = t.secretTexts.get(key);
    if (text !== undefined && (await readTextOrUndefined(file)) === undefined) {
      await t.serial(file, () => writeAtomic(file, text, 0o600));
      written.push(file);
    }
    const tf = tokenFile(t.dir, namespace, connector);
    if (secret.token !== undefined && (await readTextOrUndefined(tf)) !== secret.token) {
      await syncTokenFile(t, namespace, connector, secret.token);
      written.push(tf);
    }
  }
  return written;
}
