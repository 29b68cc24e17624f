import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import { Bundle } from './bundle.ts';
import { Connector } from './connector.ts';
import { Directory } from './directory.ts';
import { API_VERSION } from './meta.ts';
import { Rule } from './rule.ts';

/** A resource read from YAML, validated against its kind's schema. */
export type Manifest =
  | { readonly kind: 'Rule'; readonly object: Rule }
  | { readonly kind: 'Connector'; readonly object: Connector }
  | { readonly kind: 'Bundle'; readonly object: Bundle }
  | { readonly kind: 'Directory'; readonly object: Directory };

/** A document that could not be used, with where it came from and what is wrong, in one line. */
export interface ManifestError {
  readonly source: string;
  /** 0-based position of the document in its file. */
  readonly document: number;
  readonly name: string | undefined;
  readonly message: string;
}

export interface ParseOptions {
  /** Namespace for documents that name none, as `kubectl apply` does (default "default"). */
  readonly defaultNamespace?: string;
}

const SCHEMAS = { Rule, Connector, Bundle, Directory } as const;

/** "spec.actions: Too small: expected array to have >=1 items; metadata.name: …" */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length > 0 ? `${i.path.map(String).join('.')}: ` : ''}${i.message}`).join('; ');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parses multi-document YAML into Rule, Connector, Bundle and Directory objects. A bad document never hides
 * the others: it becomes an error naming the source, the document and the problem.
 */
export function parseManifests(
  text: string,
  source: string,
  options: ParseOptions = {},
): { manifests: Manifest[]; errors: ManifestError[] } {
  const manifests: Manifest[] = [];
  const errors: ManifestError[] = [];
  const docs = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [];
  list.forEach((doc, index) => {
    const fail = (message: string, name?: string): void => {
      errors.push({ source, document: index, name, message });
    };
    if (doc.errors.length > 0) {
      fail(`invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
      return;
    }
    const raw: unknown = doc.toJS({ maxAliasCount: 100 });
    if (raw === null || raw === undefined) return; // an empty document, e.g. after a trailing ---
    if (!isRecord(raw)) {
      fail('a document must be a mapping with apiVersion, kind, metadata and spec');
      return;
    }
    const metadata = isRecord(raw['metadata']) ? raw['metadata'] : undefined;
    const name = typeof metadata?.['name'] === 'string' ? metadata['name'] : undefined;
    const kind = raw['kind'];
    // API key Secrets live beside the resources in a manifests folder; they are the service's business.
    if (raw['apiVersion'] === 'v1' && kind === 'Secret') return;
    if (raw['apiVersion'] !== API_VERSION || (kind !== 'Rule' && kind !== 'Connector' && kind !== 'Bundle' && kind !== 'Directory')) {
      fail(
        `not a resource of ours: expected apiVersion ${API_VERSION} and kind Rule, Connector, Bundle or Directory, found ${String(raw['apiVersion'])} ${String(kind)}`,
        name,
      );
      return;
    }
    const withNamespace =
      metadata && metadata['namespace'] === undefined
        ? { ...raw, metadata: { ...metadata, namespace: options.defaultNamespace ?? 'default' } }
        : raw;
    const parsed = SCHEMAS[kind].safeParse(withNamespace);
    if (!parsed.success) {
      fail(`invalid ${kind}: ${describeIssues(parsed.error)}`, name);
      return;
    }
    manifests.push({ kind, object: parsed.data } as Manifest);
  });
  return { manifests, errors };
}
