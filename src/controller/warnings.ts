// Lint in the cluster (and in standalone's state folder): after a drain publishes, the leader lints
// the tenants the drain touched (src/lint) and puts each object's findings in its status as a
// Warning condition; an object without findings carries none. A finding that appears is reported
// once: a Warning Event (reason: its code) and a log line. Facts are cached per spec object by
// src/lint, so a tenant of 10,000 rules costs its cross-object checks, in slices; a drain that
// changed nothing lint reads in a tenant (the echo of a status write) keeps its last findings, and
// a pass reuses the result of each object that, with its findings, did not change.
import { Condition, isObject } from '../api/index.ts';
import {
  ANNOTATION_LINT_IGNORE,
  type Finding,
  findingsText,
  findingText,
  type LintKind,
  type LintObject,
  lintSteps,
} from '../lint/index.ts';
import { drive } from '../work/index.ts';
import { kubeTime } from './conditions.ts';
import type { ReconcileDeps } from './deps.ts';
import { keyText, type ObjectKey, type SourceObject } from './types.ts';

const LINTED: readonly LintKind[] = ['Rule', 'Connector', 'Bundle', 'Directory'];
const WARNING = 'Warning';
/** Objects whose Warning condition is worked out between two chances to yield (about a microsecond each). */
const OBJECTS_PER_SLICE = 256;
/** The longest condition message the CRDs accept. */
const MAX_MESSAGE = 32768;

type Status = Readonly<Record<string, unknown>>;

/** What one lint pass asks of the status writes. */
export interface LintPass {
  /** The status to write for an object reconciled in this drain: its own, with the Warning condition lint found (or none). */
  withWarning(key: ObjectKey, status: Status): Status;
  /** Objects not reconciled in this drain whose findings changed: their recorded status with the new Warning condition. */
  readonly rewrites: readonly { readonly key: ObjectKey; readonly status: Status }[];
  /**
   * Objects not reconciled in this drain whose findings changed but whose recorded status the source
   * keeps abridged (statusDigest), so it cannot be rewritten from what is held: the drain reconciles
   * them again for it (withWarning knows their Warning condition).
   */
  readonly again: readonly ObjectKey[];
}

export interface DrainLinter {
  /**
   * Lints the tenants of `touched` (the leader's part: it writes the conditions and Events).
   * `reconciled`: key texts whose status this drain writes anyway (withWarning adds to those).
   */
  pass(touched: Iterable<ObjectKey>, reconciled: ReadonlySet<string>, deps: ReconcileDeps): Promise<LintPass>;
  /** A drain ran without lint (as a follower): what the last passes read may have changed unseen. */
  forget(): void;
}

/** A finding as it identifies itself in a condition message: stable while the object's own facts are. */
const identity = (f: Finding): string => findingText({ ...f, hint: '' });

/** The Warning condition a status recorded, if any. */
function recordedWarning(status: unknown): Condition | undefined {
  const conditions = isObject(status) ? status['conditions'] : undefined;
  const found = Array.isArray(conditions) ? conditions.find((c) => isObject(c) && c['type'] === WARNING) : undefined;
  const parsed = found === undefined ? undefined : Condition.safeParse(found);
  return parsed?.success ? parsed.data : undefined;
}

/** The Warning condition of `findings` (none when there are none); lastTransitionTime moves only when it appears. */
function warningOf(findings: readonly Finding[], previous: Condition | undefined, generation: number, now: Date): Condition | undefined {
  const first = findings[0];
  if (!first) return undefined;
  const message = findingsText(findings);
  return {
    type: WARNING,
    status: 'True',
    reason: first.code,
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message,
    observedGeneration: generation,
    lastTransitionTime: previous?.status === 'True' && previous.lastTransitionTime ? previous.lastTransitionTime : kubeTime(now),
  };
}

/** `status` with its Warning condition replaced by `warning` (or removed); the same object when nothing changes. */
function replaceWarning(status: Status, warning: Condition | undefined): Status {
  const conditions = Array.isArray(status['conditions']) ? (status['conditions'] as unknown[]) : undefined;
  const kept = (conditions ?? []).filter((c) => !(isObject(c) && c['type'] === WARNING));
  if (!warning && kept.length === (conditions?.length ?? 0)) return status;
  return { ...status, conditions: warning ? [...kept, warning] : kept };
}

function sameWarning(a: Condition | undefined, b: Condition | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.reason === b.reason && a.message === b.message;
}

/** The objects of a tenant lint reads: every kind it checks, as the source holds them now. */
function tenantObjects(deps: ReconcileDeps, tenant: string): { objects: SourceObject[]; linted: LintObject[] } {
  const objects = LINTED.flatMap((kind) => deps.objects.list(kind, tenant));
  const linted = objects.map((o): LintObject => ({ kind: o.kind as LintKind, namespace: tenant, name: o.metadata.name, raw: o.raw }));
  return { objects, linted };
}

/** What lint reads of an object, in a word: which object (uid), its spec (generation) and its lint-ignore annotation. */
function lintInput(obj: SourceObject | undefined): string {
  return obj ? `${obj.metadata.uid ?? ''}|${obj.metadata.generation ?? 0}|${obj.metadata.annotations?.[ANNOTATION_LINT_IGNORE] ?? ''}` : '';
}

/** A tenant's last pass: what lint read of each object, and the Warning condition it gave each. */
interface TenantPass {
  readonly inputs: ReadonlyMap<string, string>;
  readonly warnings: ReadonlyMap<string, Condition | undefined>;
}

/** What one pass worked out for one object. */
interface ObjectResult {
  readonly key: ObjectKey;
  readonly obj: SourceObject;
  /** findingsText of its findings. */
  readonly said: string;
  /** Its Warning condition (none without findings). */
  readonly next: Condition | undefined;
  /** The status to write when it is not reconciled in the drain: its recorded status with `next` (undefined: nothing to write). */
  readonly rewrite: Status | undefined;
  /** Nothing to rewrite and no time of this pass in `next`: a later pass over the same object and findings gives the same. */
  readonly settled: boolean;
}

/** One object's result in a pass: its Warning condition, the rewrite it asks, its new findings announced. */
function resultOf(
  deps: ReconcileDeps,
  obj: SourceObject,
  findings: readonly Finding[],
  before: ReadonlySet<string> | undefined,
  said: string,
  now: Date,
): ObjectResult {
  const key: ObjectKey = { kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name };
  const recorded = obj.raw['status'];
  const was = recordedWarning(recorded);
  announce(deps, obj, findings, before, was);
  const next = warningOf(findings, was, obj.metadata.generation ?? 0, now);
  const rewrite = isObject(recorded) && !sameWarning(was, next) ? replaceWarning(recorded, next) : undefined;
  const timed = next !== undefined && next.lastTransitionTime !== was?.lastTransitionTime;
  return { key, obj, said, next, rewrite, settled: rewrite === undefined && !timed };
}

/** A Warning Event and a log line for each finding of `obj` that neither this replica nor its recorded status has seen. */
function announce(
  deps: ReconcileDeps,
  obj: SourceObject,
  findings: readonly Finding[],
  before: ReadonlySet<string> | undefined,
  was: Condition | undefined,
) {
  for (const f of findings) {
    const id = identity(f);
    if (before?.has(id) || was?.message?.includes(id)) continue;
    deps.log.warn(
      { code: f.code, kind: f.kind, namespace: f.namespace, name: f.name, problem: f.message, hint: f.hint },
      'Found a lint finding',
    );
    deps.writer.recordEvent?.(obj, { type: 'Warning', reason: f.code, message: `${f.message}. Fix: ${f.hint}` });
  }
}

export function createDrainLinter(): DrainLinter {
  /** By tenant, by key text: the identities of the findings last seen, so that each appearance is reported once. */
  const seen = new Map<string, Map<string, ReadonlySet<string>>>();
  /** By tenant, by key text: the last pass's result, reused for an object that did not change and whose findings did not. */
  const results = new Map<string, Map<string, ObjectResult>>();
  /** By tenant: its last pass, so a drain that changed nothing lint reads (the echo of a status write) does not lint it again. */
  const passes = new Map<string, TenantPass>();

  /** The last pass of `tenant` when none of `keys` changed what lint reads since: its findings stand. */
  function unchanged(deps: ReconcileDeps, tenant: string, keys: readonly ObjectKey[]): TenantPass | undefined {
    const last = passes.get(tenant);
    const same = (k: ObjectKey) => (last?.inputs.get(keyText(k)) ?? '') === lintInput(deps.objects.get(k.kind, k.namespace, k.name));
    return last && keys.every(same) ? last : undefined;
  }

  async function pass(touched: Iterable<ObjectKey>, reconciled: ReadonlySet<string>, deps: ReconcileDeps): Promise<LintPass> {
    const keys = [...touched].filter((k) => k.kind !== 'Secret');
    const tenants = [...new Set(keys.map((k) => k.namespace))].sort();
    const warnings = new Map<string, Condition | undefined>();
    const rewrites: { key: ObjectKey; status: Status }[] = [];
    const again: ObjectKey[] = [];
    const now = deps.now();
    for (const tenant of tenants) {
      const last = unchanged(
        deps,
        tenant,
        keys.filter((k) => k.namespace === tenant),
      );
      if (last) {
        for (const [text, warning] of last.warnings) warnings.set(text, warning);
        continue;
      }
      // Set again once this pass is through: a pass that fails leaves none behind to trust.
      passes.delete(tenant);
      const inputs = new Map<string, string>();
      const { objects, linted } = tenantObjects(deps, tenant);
      const byKey = new Map<string, Finding[]>();
      for (const f of await drive(lintSteps(linted), deps.slicer)) {
        const text = keyText(f);
        const list = byKey.get(text);
        if (list) list.push(f);
        else byKey.set(text, [f]);
      }
      const before = seen.get(tenant);
      const after = new Map<string, ReadonlySet<string>>();
      const lastResults = results.get(tenant);
      const nextResults = new Map<string, ObjectResult>();
      for (const [i, obj] of objects.entries()) {
        if (i % OBJECTS_PER_SLICE === OBJECTS_PER_SLICE - 1) await deps.slicer.pause();
        const text = keyText({ kind: obj.kind, namespace: tenant, name: obj.metadata.name });
        inputs.set(text, lintInput(obj));
        const findings = byKey.get(text) ?? [];
        const said = findings.length === 0 ? '' : findingsText(findings);
        const last = lastResults?.get(text);
        const known = before?.get(text);
        // The very object (same status) with the same findings as the last pass, which asked no
        // rewrite of it: the same result, and nothing new to announce (`before` holds its findings).
        const reused =
          last !== undefined && last.obj === obj && last.said === said && last.settled && (known !== undefined) === (said !== '');
        const result = reused ? last : resultOf(deps, obj, findings, known, said, now);
        nextResults.set(text, result);
        if (findings.length > 0) after.set(text, reused && known ? known : new Set(findings.map(identity)));
        warnings.set(text, result.next);
        if (result.rewrite && !reconciled.has(text)) {
          if (obj.statusDigest === undefined) rewrites.push({ key: result.key, status: result.rewrite });
          else again.push(result.key);
        }
      }
      seen.set(tenant, after);
      results.set(tenant, nextResults);
      passes.set(tenant, { inputs, warnings: new Map([...inputs.keys()].map((text) => [text, warnings.get(text)])) });
      await deps.slicer.pause();
    }
    return {
      withWarning: (key, status) => {
        const text = keyText(key);
        return warnings.has(text) ? replaceWarning(status, warnings.get(text)) : status;
      },
      rewrites,
      again,
    };
  }
  return {
    pass,
    forget: () => {
      passes.clear();
      results.clear();
    },
  };
}
