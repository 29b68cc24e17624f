// Putting a scan's result in force: an object missing from the folder is deleted only once a later
// scan still misses it, the new view replaces the old one at once, then what changed is written to
// the state folder and enqueued, and new problems and settling files are reported.
import { canonicalJson } from '../bundle/index.ts';
import { keyText, type ObjectKey } from '../controller/index.ts';
import type { DocumentProblem } from './objects.ts';
import type { ScanResult } from './scan.ts';
import { type Held, keyOf, type SourceView } from './view.ts';

/** Makes `r` the source's view: saves and enqueues every key whose object or generation changed. */
export async function applyScan(v: SourceView, r: ScanResult): Promise<void> {
  // The scan kept the view as it is (scan.ts): nothing changed, nothing to compare.
  const whole = r.next !== v.held;
  const recheck = whole && (await keepUnconfirmed(v, r));
  const changed: ObjectKey[] = [];
  const gone: Held[] = [];
  if (whole) {
    const keys = new Map<string, boolean>();
    for (const [key, h] of r.next) {
      const before = v.held.get(key);
      // The same Held (an unchanged document) is unchanged: no strings to compare.
      if (before !== h && (before?.fingerprint !== h.fingerprint || before.generation !== h.generation)) changed.push(keyOf(h));
      if (h.object.kind === 'Secret' || !keys.has(h.object.source)) keys.set(h.object.source, h.object.kind === 'Secret');
    }
    for (const [k, h] of v.held) if (!r.next.has(k)) gone.push(h);
    v.sources = { held: r.next, keys };
  }
  // The new view (objects and generations together) is in place before anything is written or
  // enqueued: a reconcile never mixes two scans.
  v.held = r.next;
  v.firstScan = false;
  for (const h of gone) {
    v.missingSince.delete(h.key);
    v.log.info({ kind: h.object.kind, key: h.key }, 'Saw object removed from the manifests folder');
    changed.push(keyOf(h));
  }
  await saveChanged(v, changed);
  for (const key of changed) v.enqueue(key);
  if (recheck) v.scheduleRescan(v.confirmDeleteMs);
  await reportProblems(v, r.found);
  if (r.settling.length > 0 && canonicalJson(r.settling) !== canonicalJson(v.settlingFiles))
    v.log.info({ files: r.settling, settleMs: v.settleMs }, 'Waiting for manifest files to hold still before using them');
  v.settlingFiles = r.settling;
}

/**
 * Carries into `r.next` the held objects a scan did not find but that stay: those of files kept as
 * they were, and those missed for less than the confirm-delete interval. Returns whether a rescan
 * must confirm a deletion.
 */
async function keepUnconfirmed(v: SourceView, r: ScanResult): Promise<boolean> {
  const now = v.clock();
  let recheck = false;
  let visited = 0;
  for (const [key, h] of v.held) {
    if ((++visited & 255) === 0) {
      const paused = v.slicer.pause();
      if (paused) await paused;
    }
    if (r.next.has(key)) {
      v.missingSince.delete(key);
      continue;
    }
    if (r.keep.has(h.object.source)) {
      v.missingSince.delete(key);
      // An emptied file's API keys go at once (scan.ts says why); nothing to confirm, the file is there.
      if (h.object.kind !== 'Secret' || !r.emptied.has(h.object.source)) r.next.set(key, h);
      continue;
    }
    const since = v.missingSince.get(key) ?? now;
    if (now - since < v.confirmDeleteMs) {
      v.missingSince.set(key, since);
      r.next.set(key, h);
      recheck = true;
    }
  }
  return recheck;
}

/** Writes the changed objects (never Secrets) to the state folder, or removes the deleted ones. */
async function saveChanged(v: SourceView, changed: readonly ObjectKey[]): Promise<void> {
  for (const key of changed) {
    const h = v.held.get(keyText(key));
    if (key.kind === 'Secret') continue;
    if (h === undefined) {
      await v.state.removeObject(key.kind, key.namespace, key.name);
      continue;
    }
    const known = v.state.object(key.kind, key.namespace, key.name);
    await v.state.saveObject({
      kind: key.kind,
      namespace: key.namespace,
      name: key.name,
      generation: h.generation,
      specDigest: h.specDigest,
      source: h.object.source,
      raw: h.object.raw,
      status: known?.status,
    });
  }
}

/** Logs the problems not reported by the scan before, and rewrites problems.yaml when they changed. */
async function reportProblems(v: SourceView, found: DocumentProblem[]): Promise<void> {
  const before = new Set(v.problems.map((p) => canonicalJson(p)));
  for (const p of found)
    if (!before.has(canonicalJson(p)))
      v.log.warn({ file: p.source, document: p.document, name: p.name, problem: p.message }, 'Skipped manifest document');
  if (canonicalJson(found) !== canonicalJson(v.problems)) await v.state.writeProblems(found);
  v.problems = found;
}
