// What the service reports into the state folder, for acl-operator status and for the next start:
// problems.yaml, activity/<ns>/<bundle>.yaml, agents/<ns>/<bundle>.json, decisions/<ns>/<bundle>.json.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { parseLosslessJson, type RecentDecision } from '../fleet/index.ts';
import type { SyncRecord } from '../store/index.ts';
import { fileNames, readYamlFiles, type StateFiles, unlessMissing, writeAtomic } from './files.ts';
import type { DocumentProblem } from './objects.ts';
import { isObject } from '../api/index.ts';

/** The recent decisions kept for one bundle. */
export interface BundleDecisions {
  namespace: string;
  bundle: string;
  decisions: RecentDecision[];
}

/** Writes problems.yaml. */
export async function writeProblems(f: StateFiles, problems: readonly DocumentProblem[]): Promise<void> {
  const file = join(f.dir, 'problems.yaml');
  await f.serial(file, () => writeAtomic(file, stringify({ problems: problems.map((p) => ({ ...p })) })));
}

/** The problems of problems.yaml; none when it is missing. */
export function readProblems(dir: string): Promise<DocumentProblem[]> {
  return unlessMissing(async () => {
    const doc: unknown = parse(await readFile(join(dir, 'problems.yaml'), 'utf8'));
    return isObject(doc) && Array.isArray(doc['problems']) ? (doc['problems'] as DocumentProblem[]) : [];
  }, []);
}

/** Writes a bundle's sync activity. */
export async function writeActivity(f: StateFiles, namespace: string, bundle: string, records: readonly SyncRecord[]): Promise<void> {
  const file = join(f.dir, 'activity', namespace, `${bundle}.yaml`);
  await f.serial(file, () => writeAtomic(file, stringify({ namespace, bundle, records: records.map((r) => ({ ...r })) })));
}

/** Every bundle's sync activity. */
export async function readActivity(dir: string): Promise<{ namespace: string; bundle: string; records: SyncRecord[] }[]> {
  const docs = await readYamlFiles(join(dir, 'activity'));
  return docs
    .filter(isObject)
    .filter((d) => Array.isArray(d['records']))
    .map((d) => ({
      namespace: String(d['namespace']),
      bundle: String(d['bundle']),
      records: d['records'] as SyncRecord[],
    }));
}

/** Writes a bundle's agents document, or removes it when undefined. */
export async function writeAgents(
  f: StateFiles,
  namespace: string,
  bundle: string,
  doc: Readonly<Record<string, unknown>> | undefined,
): Promise<void> {
  // JSON, not YAML: with 1,000 agents YAML took 40 ms of event loop every 5 s, JSON 0.5 ms.
  const file = join(f.dir, 'agents', namespace, `${bundle}.json`);
  await f.serial(file, () => (doc === undefined ? rm(file, { force: true }) : writeAtomic(file, `${JSON.stringify(doc, null, 1)}\n`)));
}

/** A bundle's agents document; undefined when it is missing. */
export function readAgents(dir: string, namespace: string, bundle: string): Promise<Record<string, unknown> | undefined> {
  return unlessMissing(async () => {
    const doc: unknown = JSON.parse(await readFile(join(dir, 'agents', namespace, `${bundle}.json`), 'utf8'));
    return isObject(doc) ? doc : undefined;
  }, undefined);
}

/** Writes a bundle's recent decisions (mode 0600: they hold inputs), or removes them when undefined. */
export async function writeDecisions(
  f: StateFiles,
  namespace: string,
  bundle: string,
  decisions: readonly RecentDecision[] | undefined,
): Promise<void> {
  const file = join(f.dir, 'decisions', namespace, `${bundle}.json`);
  await f.serial(file, () =>
    decisions === undefined
      ? rm(file, { force: true })
      : writeAtomic(file, `${JSON.stringify({ namespace, bundle, decisions }, null, 1)}\n`, 0o600),
  );
}

/** Every bundle's recent decisions; a file that cannot be read is passed to `onUnreadable` and skipped. */
export async function readDecisions(dir: string, onUnreadable?: (file: string, message: string) => void): Promise<BundleDecisions[]> {
  const out: BundleDecisions[] = [];
  for (const n of await fileNames(join(dir, 'decisions'), '.json')) {
    const file = join(dir, 'decisions', n);
    let doc: unknown;
    try {
      // Exactly as written: an input's numbers survive a restart unrounded.
      doc = parseLosslessJson(await readFile(file, 'utf8'));
    } catch (err) {
      onUnreadable?.(file, err instanceof Error ? err.message : String(err));
      continue;
    }
    if (isObject(doc) && Array.isArray(doc['decisions']))
      out.push({ namespace: String(doc['namespace']), bundle: String(doc['bundle']), decisions: doc['decisions'] as RecentDecision[] });
    else onUnreadable?.(file, 'not a recent-decisions document');
  }
  return out;
}
