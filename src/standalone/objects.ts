// YAML documents → SourceObjects, the one reader of manifest YAML (serve, render and the test support
// all read through it): the envelope (apiVersion, kind, metadata) is checked here so every object
// has a key; specs are checked by the controllers, so a bad spec becomes status.
import { parseAllDocuments } from 'yaml';
import { API_VERSION, describeIssues, DnsLabel, DnsSubdomain, ObjectMeta } from '../api/index.ts';
import { LABEL_API_KEY, type Kind, type SourceObject } from '../controller/index.ts';
import { isObject } from '../api/index.ts';

export interface DocumentProblem {
  readonly source: string;
  /** 1-based position of the document in its file. */
  readonly document: number;
  readonly name: string | undefined;
  readonly message: string;
}

export interface ReadObject extends SourceObject {
  readonly source: string;
  readonly document: number;
}

const OURS = new Set<string>(['Rule', 'Connector', 'Bundle', 'Directory']);
const Envelope = ObjectMeta.extend({ name: DnsSubdomain, namespace: DnsLabel });

/** Secret `stringData` folds into base64 `data`, as the API server does on write. */
function foldStringData(raw: Record<string, unknown>): Record<string, unknown> {
  const stringData = raw['stringData'];
  if (!isObject(stringData)) return raw;
  const data: Record<string, unknown> = isObject(raw['data']) ? { ...raw['data'] } : {};
  for (const [k, v] of Object.entries(stringData)) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
  const { stringData: _dropped, ...rest } = raw;
  return { ...rest, data };
}

/**
 * Reads every document of one YAML text. A document that cannot be keyed (broken YAML, unknown
 * kind, bad name) is a problem; `unreadable` says the file had YAML errors, so objects it held
 * before must be kept rather than deleted.
 */
export function readObjects(
  text: string,
  source: string,
  defaultNamespace = 'default',
): { objects: ReadObject[]; problems: DocumentProblem[]; unreadable: boolean; documents: number } {
  const objects: ReadObject[] = [];
  const problems: DocumentProblem[] = [];
  let unreadable = false;
  const docs = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [];
  list.forEach((doc, i) => {
    const document = i + 1;
    const fail = (message: string, name?: string): void => {
      problems.push({ source, document, name, message });
    };
    if (doc.errors.length > 0) {
      unreadable = true;
      fail(`invalid YAML: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`);
      return;
    }
    let raw: unknown;
    try {
      raw = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      unreadable = true;
      fail(`invalid YAML: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (raw === null || raw === undefined) return;
    if (!isObject(raw)) {
      fail('a document must be a mapping with apiVersion, kind and metadata');
      return;
    }
    const metadataIn = isObject(raw['metadata']) ? raw['metadata'] : {};
    const name = typeof metadataIn['name'] === 'string' ? metadataIn['name'] : undefined;
    const kind = raw['kind'];
    const isOurs = raw['apiVersion'] === API_VERSION && typeof kind === 'string' && OURS.has(kind);
    const isSecret = raw['apiVersion'] === 'v1' && kind === 'Secret';
    if (!isOurs && !isSecret) {
      fail(
        `not a resource of ours: expected apiVersion ${API_VERSION} with kind Rule, Connector, Bundle or Directory, or a v1 Secret labelled ${LABEL_API_KEY}: "true"; found ${String(raw['apiVersion'])} ${String(kind)}`,
        name,
      );
      return;
    }
    const meta = Envelope.safeParse({ ...metadataIn, namespace: metadataIn['namespace'] ?? defaultNamespace });
    if (!meta.success) {
      fail(`invalid ${String(kind)} metadata: ${describeIssues(meta.error)}`, name);
      return;
    }
    if (isSecret && meta.data.labels?.[LABEL_API_KEY] !== 'true') {
      fail(`Secret ${meta.data.name} is not labelled ${LABEL_API_KEY}: "true"; only API key Secrets are read`, name);
      return;
    }
    const { status: _ignored, ...withoutStatus } = raw;
    const body = isSecret ? foldStringData(withoutStatus) : withoutStatus;
    objects.push({ kind: kind as Kind, metadata: meta.data, raw: { ...body, metadata: meta.data }, source, document });
  });
  return { objects, problems, unreadable, documents: list.length };
}
