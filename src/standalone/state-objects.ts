// objects/<ns>/<kind>/<name>.yaml of the state folder: each object as the API server would hold it
// (metadata.generation, spec and status, plus the spec digest and source file as annotations),
// read at start and rewritten whenever its generation or status changes.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { ObjectMeta } from '../api/index.ts';
import { type Kind, keyText } from '../controller/index.ts';
import { readYamlFiles, type StateFiles, writeAtomic } from './files.ts';
import { isObject } from '../api/index.ts';

const ANNOTATION_SPEC_DIGEST = 'standalone.acl.policyagent.dev/spec-digest';
const ANNOTATION_SOURCE = 'standalone.acl.policyagent.dev/source';
const INTERNAL_PREFIX = 'standalone.acl.policyagent.dev/';

/** Objects whose JSON is longer than this are written as JSON rather than block YAML. */
const LARGE_OBJECT_CHARS = 64 * 1024;

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

/** The objects of a state folder: in memory, and the serial writer of their files. */
export interface ObjectFiles extends StateFiles {
  /** By stateKey. */
  readonly objects: Map<string, ObjectState>;
}

/** metadata without the state folder's own annotations (as the manifests folder had it). */
export function stripInternal(metadata: unknown): ObjectMeta {
  const m = isObject(metadata) ? metadata : {};
  const annotations = isObject(m['annotations'])
    ? Object.fromEntries(Object.entries(m['annotations']).filter(([k]) => !k.startsWith(INTERNAL_PREFIX)))
    : undefined;
  const { annotations: _dropped, generation: _generation, uid: _uid, ...rest } = m;
  return { ...rest, ...(annotations && Object.keys(annotations).length > 0 ? { annotations } : {}) } as ObjectMeta;
}

/** The key an object is kept under in memory. */
/** The key an object's state is held under: the controller's key text. */
export const stateKey = (kind: Kind, namespace: string, name: string): string => keyText({ kind, namespace, name });

const objectFile = (dir: string, kind: Kind, namespace: string, name: string): string =>
  join(dir, 'objects', namespace, kind.toLowerCase(), `${name}.yaml`);

/** An object file's document as ObjectState, or undefined when it is not an object with metadata. */
function objectStateOf(doc: unknown): ObjectState | undefined {
  if (!isObject(doc) || !isObject(doc['metadata'])) return undefined;
  const m = doc['metadata'];
  const annotations = isObject(m['annotations']) ? m['annotations'] : {};
  const { status, ...raw } = doc;
  return {
    kind: doc['kind'] as Kind,
    namespace: String(m['namespace']),
    name: String(m['name']),
    generation: typeof m['generation'] === 'number' ? m['generation'] : 1,
    specDigest: String(annotations[ANNOTATION_SPEC_DIGEST] ?? ''),
    source: String(annotations[ANNOTATION_SOURCE] ?? ''),
    raw,
    status: isObject(status) ? status : undefined,
  };
}

/** Reads every object file into `o.objects`. */
export async function loadObjects(o: ObjectFiles): Promise<void> {
  for (const doc of await readYamlFiles(join(o.dir, 'objects'))) {
    const s = objectStateOf(doc);
    if (s) o.objects.set(stateKey(s.kind, s.namespace, s.name), s);
  }
}

/** The document an object's file holds: its manifest with generation, annotations and status added. */
function objectDocument(s: ObjectState): Record<string, unknown> {
  const metadata = isObject(s.raw['metadata']) ? s.raw['metadata'] : {};
  return {
    ...s.raw,
    metadata: {
      ...metadata,
      name: s.name,
      namespace: s.namespace,
      generation: s.generation,
      annotations: {
        ...(isObject(metadata['annotations']) ? metadata['annotations'] : {}),
        [ANNOTATION_SPEC_DIGEST]: s.specDigest,
        [ANNOTATION_SOURCE]: s.source,
      },
    },
    ...(s.status ? { status: s.status } : {}),
  };
}

function writeObject(o: ObjectFiles, s: ObjectState): Promise<void> {
  const doc = objectDocument(s);
  const file = objectFile(o.dir, s.kind, s.namespace, s.name);
  const json = JSON.stringify(doc, null, 2);
  // A large object (a Directory of thousands of entities) is written as JSON, which is YAML too:
  // the YAML printer takes about 100 ms for 5,000 entities, JSON.stringify a few.
  return o.serial(file, () =>
    writeAtomic(file, json.length > LARGE_OBJECT_CHARS ? `${json}\n` : stringify(doc, { sortMapEntries: false })),
  );
}

/** Remembers `s` and writes its file. */
export async function saveObject(o: ObjectFiles, s: ObjectState): Promise<void> {
  o.objects.set(stateKey(s.kind, s.namespace, s.name), s);
  await writeObject(o, s);
}

/** Replaces the status of a remembered object and writes its file; an object not remembered is left alone. */
export async function saveStatus(
  o: ObjectFiles,
  kind: Kind,
  namespace: string,
  name: string,
  status: Readonly<Record<string, unknown>>,
): Promise<void> {
  const s = o.objects.get(stateKey(kind, namespace, name));
  if (!s) return;
  const next = { ...s, status };
  o.objects.set(stateKey(kind, namespace, name), next);
  await writeObject(o, next);
}

/** Forgets an object and removes its file. */
export async function removeObject(o: ObjectFiles, kind: Kind, namespace: string, name: string): Promise<void> {
  o.objects.delete(stateKey(kind, namespace, name));
  const file = objectFile(o.dir, kind, namespace, name);
  await o.serial(file, () => rm(file, { force: true }));
}
