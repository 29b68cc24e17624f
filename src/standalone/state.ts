// The state folder of standalone mode: what the API server would hold in a cluster, as
// Kubernetes-shaped YAML, so tokens, generations, revisions and ETags survive a restart.
//   objects/<ns>/<kind>/<name>.yaml   the object with metadata.generation, spec and status
//   secrets/<ns>/<connector>-token.yaml   the connector's token Secret (v1)
//   tokens/<ns>/<connector>           the bare token (mode 0600), for OPA's token_path
//   activity/<ns>/<bundle>.yaml       sync activity, newest first
//   agents/<ns>/<bundle>.json         the OPA agents that report on the bundle, and its rollout
//   decisions/<ns>/<bundle>.json      the newest decisions OPA reported (mode 0600: inputs)
//   problems.yaml                     documents of the manifests folder that could not be used
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { API_VERSION, type ObjectMeta } from '../api/index.ts';
import {
  ANNOTATION_ISSUED_AT,
  ANNOTATION_ROTATION,
  LABEL_CONNECTOR,
  secretToken,
  tokenSecretName,
  type Kind,
  type SourceObject,
  type TokenSecret,
} from '../controller/index.ts';
import { parseLosslessJson, type RecentDecision } from '../fleet/index.ts';
import type { SyncRecord } from '../store/index.ts';
import { writeAtomic } from './files.ts';
import type { DocumentProblem } from './objects.ts';

export const ANNOTATION_SPEC_DIGEST = 'standalone.acl.policyagent.dev/spec-digest';
export const ANNOTATION_SOURCE = 'standalone.acl.policyagent.dev/source';
const INTERNAL_PREFIX = 'standalone.acl.policyagent.dev/';

/** metadata without the state folder's own annotations (as the manifests folder had it). */
export function stripInternal(metadata: unknown): ObjectMeta {
  const m = isRecord(metadata) ? metadata : {};
  const annotations = isRecord(m['annotations'])
    ? Object.fromEntries(Object.entries(m['annotations']).filter(([k]) => !k.startsWith(INTERNAL_PREFIX)))
    : undefined;
  const { annotations: _dropped, generation: _generation, uid: _uid, ...rest } = m;
  return { ...rest, ...(annotations && Object.keys(annotations).length > 0 ? { annotations } : {}) } as ObjectMeta;
}

/** What the state folder remembers of one object. */
export interface ObjectState {
  readonly kind: Kind;
  readonly namespace: string;
  readonly name: string;
  readonly generation: number;
  readonly specDigest: string;
  /** The manifest file it came from, relative to the manifests folder. */
  readonly source: string;
  readonly raw: Readonly<Record<string, unknown>>;
  readonly status: Readonly<Record<string, unknown>> | undefined;
}

const stateKey = (kind: Kind, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

async function readYamlFiles(dir: string): Promise<unknown[]> {
  let names: string[];
  try {
    names = (await readdir(dir, { recursive: true })).filter((n) => n.endsWith('.yaml')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return Promise.all(names.map(async (n) => parse(await readFile(join(dir, n), 'utf8')) as unknown));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Objects whose JSON is longer than this are written as JSON rather than block YAML. */
const LARGE_OBJECT_CHARS = 64 * 1024;

export interface StateFolder {
  readonly dir: string;
  load(): Promise<void>;
  object(kind: Kind, namespace: string, name: string): ObjectState | undefined;
  objects(): readonly ObjectState[];
  saveObject(state: ObjectState): Promise<void>;
  saveStatus(kind: Kind, namespace: string, name: string, status: Readonly<Record<string, unknown>>): Promise<void>;
  removeObject(kind: Kind, namespace: string, name: string): Promise<void>;
  tokenSecret(namespace: string, connector: string): TokenSecret | undefined;
  writeTokenSecret(owner: SourceObject, secret: TokenSecret): Promise<void>;
  deleteTokenSecret(namespace: string, connector: string): Promise<void>;
  tokenFile(namespace: string, connector: string): string;
  /**
   * Puts back, from memory, a token file or token Secret file that disappeared (or changed) while
   * running, so OPA's token_path and the next start keep the issued token. Returns the files written.
   */
  repairTokens(): Promise<string[]>;
  writeProblems(problems: readonly DocumentProblem[]): Promise<void>;
  problems(): Promise<DocumentProblem[]>;
  writeActivity(namespace: string, bundle: string, records: readonly SyncRecord[]): Promise<void>;
  activity(): Promise<{ namespace: string; bundle: string; records: SyncRecord[] }[]>;
  /** The agents of a bundle (GET .../agents's document); undefined removes the file. */
  writeAgents(namespace: string, bundle: string, doc: Readonly<Record<string, unknown>> | undefined): Promise<void>;
  agents(namespace: string, bundle: string): Promise<Record<string, unknown> | undefined>;
  /** Removes every agents file: agents live in memory, and a restarted service has heard from none yet. */
  clearAgents(): Promise<void>;
  writeDecisions(namespace: string, bundle: string, decisions: readonly RecentDecision[] | undefined): Promise<void>;
  /** The recent decisions kept per bundle; a file that cannot be read is passed to `onUnreadable` and skipped, the others still read. */
  decisions(
    onUnreadable?: (file: string, message: string) => void,
  ): Promise<{ namespace: string; bundle: string; decisions: RecentDecision[] }[]>;
}

export function openStateFolder(dir: string): StateFolder {
  const objects = new Map<string, ObjectState>();
  const secrets = new Map<string, TokenSecret>();
  /** The Secret file's text as last written this run, by `<ns>/<connector>` (for repairTokens). */
  const secretTexts = new Map<string, string>();
  // Writes to one file are chained so a slow write never lands after a newer one.
  const chains = new Map<string, Promise<void>>();
  const serial = (file: string, write: () => Promise<void>): Promise<void> => {
    const next = (chains.get(file) ?? Promise.resolve()).then(write, write);
    chains.set(file, next);
    return next.finally(() => {
      if (chains.get(file) === next) chains.delete(file);
    });
  };
  const objectFile = (kind: Kind, namespace: string, name: string): string =>
    join(dir, 'objects', namespace, kind.toLowerCase(), `${name}.yaml`);
  const secretFile = (namespace: string, connector: string): string =>
    join(dir, 'secrets', namespace, `${tokenSecretName(connector)}.yaml`);
  const tokenFile = (namespace: string, connector: string): string => join(dir, 'tokens', namespace, connector);

  const syncTokenFile = async (namespace: string, connector: string, token: string | undefined): Promise<void> => {
    const tf = tokenFile(namespace, connector);
    const current = await readFile(tf, 'utf8').catch(() => undefined);
    if (current === token) return;
    await serial(tf, () => (token === undefined ? rm(tf, { force: true }) : writeAtomic(tf, token, 0o600)));
  };

  const writeObject = (s: ObjectState): Promise<void> => {
    const metadata = isRecord(s.raw['metadata']) ? s.raw['metadata'] : {};
    const doc = {
      ...s.raw,
      metadata: {
        ...metadata,
        name: s.name,
        namespace: s.namespace,
        generation: s.generation,
        annotations: {
          ...(isRecord(metadata['annotations']) ? metadata['annotations'] : {}),
          [ANNOTATION_SPEC_DIGEST]: s.specDigest,
          [ANNOTATION_SOURCE]: s.source,
        },
      },
      ...(s.status ? { status: s.status } : {}),
    };
    const file = objectFile(s.kind, s.namespace, s.name);
    const json = JSON.stringify(doc, null, 2);
    // A large object (a Directory of thousands of entities) is written as JSON, which is YAML too:
    // the YAML printer takes about 100 ms for 5,000 entities, JSON.stringify a few.
    return serial(file, () =>
      writeAtomic(file, json.length > LARGE_OBJECT_CHARS ? `${json}\n` : stringify(doc, { sortMapEntries: false })),
    );
  };

  return {
    dir,
    async load() {
      await mkdir(dir, { recursive: true });
      for (const doc of await readYamlFiles(join(dir, 'objects'))) {
        if (!isRecord(doc) || !isRecord(doc['metadata'])) continue;
        const m = doc['metadata'];
        const annotations = isRecord(m['annotations']) ? m['annotations'] : {};
        const kind = doc['kind'] as Kind;
        const { status, ...raw } = doc;
        const s: ObjectState = {
          kind,
          namespace: String(m['namespace']),
          name: String(m['name']),
          generation: typeof m['generation'] === 'number' ? m['generation'] : 1,
          specDigest: String(annotations[ANNOTATION_SPEC_DIGEST] ?? ''),
          source: String(annotations[ANNOTATION_SOURCE] ?? ''),
          raw,
          status: isRecord(status) ? status : undefined,
        };
        objects.set(stateKey(kind, s.namespace, s.name), s);
      }
      for (const doc of await readYamlFiles(join(dir, 'secrets'))) {
        if (!isRecord(doc) || !isRecord(doc['metadata'])) continue;
        const m = doc['metadata'];
        const labels = isRecord(m['labels']) ? m['labels'] : {};
        const annotations = isRecord(m['annotations']) ? m['annotations'] : {};
        const connector = labels[LABEL_CONNECTOR];
        if (typeof connector !== 'string') continue;
        const token = secretToken(doc);
        const namespace = String(m['namespace']);
        secretTexts.set(`${namespace}/${connector}`, stringify(doc));
        secrets.set(`${namespace}/${connector}`, {
          token: token === '' ? undefined : token,
          rotation: Number(annotations[ANNOTATION_ROTATION] ?? 0),
          issuedAt: String(annotations[ANNOTATION_ISSUED_AT] ?? ''),
        });
        // The Secret is the truth; a token file left behind by a crash between the two writes is repaired.
        await syncTokenFile(namespace, connector, token === '' ? undefined : token);
      }
    },
    object: (kind, namespace, name) => objects.get(stateKey(kind, namespace, name)),
    objects: () => [...objects.values()],
    async saveObject(s) {
      objects.set(stateKey(s.kind, s.namespace, s.name), s);
      await writeObject(s);
    },
    async saveStatus(kind, namespace, name, status) {
      const s = objects.get(stateKey(kind, namespace, name));
      if (!s) return;
      const next = { ...s, status };
      objects.set(stateKey(kind, namespace, name), next);
      await writeObject(next);
    },
    async removeObject(kind, namespace, name) {
      objects.delete(stateKey(kind, namespace, name));
      const file = objectFile(kind, namespace, name);
      await serial(file, () => rm(file, { force: true }));
    },
    tokenSecret: (namespace, connector) => secrets.get(`${namespace}/${connector}`),
    async writeTokenSecret(owner, secret) {
      const { namespace, name: connector } = owner.metadata;
      const doc = {
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
      const file = secretFile(namespace, connector);
      const text = stringify(doc);
      await serial(file, () => writeAtomic(file, text, 0o600));
      secretTexts.set(`${namespace}/${connector}`, text);
      await syncTokenFile(namespace, connector, secret.token);
      // Only once both files hold it: a failed write is retried with a fresh token, never half-issued.
      secrets.set(`${namespace}/${connector}`, secret);
    },
    async deleteTokenSecret(namespace, connector) {
      secretTexts.delete(`${namespace}/${connector}`);
      if (!secrets.delete(`${namespace}/${connector}`)) return;
      const file = secretFile(namespace, connector);
      const tf = tokenFile(namespace, connector);
      await serial(file, () => rm(file, { force: true }));
      await serial(tf, () => rm(tf, { force: true }));
    },
    tokenFile,
    async repairTokens() {
      const written: string[] = [];
      for (const [key, secret] of secrets) {
        const [namespace, connector] = key.split('/') as [string, string];
        const file = secretFile(namespace, connector);
        const text = secretTexts.get(key);
        if (text !== undefined && (await readFile(file, 'utf8').catch(() => undefined)) === undefined) {
          await serial(file, () => writeAtomic(file, text, 0o600));
          written.push(file);
        }
        const tf = tokenFile(namespace, connector);
        if (secret.token !== undefined && (await readFile(tf, 'utf8').catch(() => undefined)) !== secret.token) {
          await syncTokenFile(namespace, connector, secret.token);
          written.push(tf);
        }
      }
      return written;
    },
    async writeProblems(problems) {
      const file = join(dir, 'problems.yaml');
      await serial(file, () => writeAtomic(file, stringify({ problems: problems.map((p) => ({ ...p })) })));
    },
    async problems() {
      try {
        const doc: unknown = parse(await readFile(join(dir, 'problems.yaml'), 'utf8'));
        return isRecord(doc) && Array.isArray(doc['problems']) ? (doc['problems'] as DocumentProblem[]) : [];
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
    },
    async writeActivity(namespace, bundle, records) {
      const file = join(dir, 'activity', namespace, `${bundle}.yaml`);
      await serial(file, () => writeAtomic(file, stringify({ namespace, bundle, records: records.map((r) => ({ ...r })) })));
    },
    async writeAgents(namespace, bundle, doc) {
      // JSON, not YAML: with 1,000 agents YAML took 40 ms of event loop every 5 s, JSON 0.5 ms.
      const file = join(dir, 'agents', namespace, `${bundle}.json`);
      await serial(file, () => (doc === undefined ? rm(file, { force: true }) : writeAtomic(file, `${JSON.stringify(doc, null, 1)}\n`)));
    },
    async agents(namespace, bundle) {
      try {
        const doc: unknown = JSON.parse(await readFile(join(dir, 'agents', namespace, `${bundle}.json`), 'utf8'));
        return isRecord(doc) ? doc : undefined;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
    async clearAgents() {
      await rm(join(dir, 'agents'), { recursive: true, force: true });
    },
    async writeDecisions(namespace, bundle, decisions) {
      const file = join(dir, 'decisions', namespace, `${bundle}.json`);
      await serial(file, () =>
        decisions === undefined
          ? rm(file, { force: true })
          : writeAtomic(file, `${JSON.stringify({ namespace, bundle, decisions }, null, 1)}\n`, 0o600),
      );
    },
    async decisions(onUnreadable) {
      let names: string[];
      try {
        names = (await readdir(join(dir, 'decisions'), { recursive: true })).filter((n) => n.endsWith('.json')).sort();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      const out: { namespace: string; bundle: string; decisions: RecentDecision[] }[] = [];
      for (const n of names) {
        const file = join(dir, 'decisions', n);
        let doc: unknown;
        try {
          // Exactly as written: an input's numbers survive a restart unrounded.
          doc = parseLosslessJson(await readFile(file, 'utf8'));
        } catch (err) {
          onUnreadable?.(file, err instanceof Error ? err.message : String(err));
          continue;
        }
        if (isRecord(doc) && Array.isArray(doc['decisions']))
          out.push({ namespace: String(doc['namespace']), bundle: String(doc['bundle']), decisions: doc['decisions'] as RecentDecision[] });
        else onUnreadable?.(file, 'not a recent-decisions document');
      }
      return out;
    },
    async activity() {
      const docs = await readYamlFiles(join(dir, 'activity'));
      return docs
        .filter(isRecord)
        .filter((d) => Array.isArray(d['records']))
        .map((d) => ({
          namespace: String(d['namespace']),
          bundle: String(d['bundle']),
          records: d['records'] as SyncRecord[],
        }));
    },
  };
}
