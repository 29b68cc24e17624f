// Lint: objects → findings. Objects are grouped by namespace (a tenant), each object's facts come
// from the cache of facts.ts, every check of checks.ts runs over each tenant, and the findings come
// back in one deterministic order. Pure: no clock, no I/O.
import { isObject } from '../api/index.ts';
import { CHECKS, type Draft } from './checks.ts';
import { factsOf, type Facts, type LintKind } from './facts.ts';
import { type Entry, type LintObject, tenantOf } from './tenant.ts';

export interface Finding {
  /** Stable, UpperCamelCase (docs/testing.md lists them); never renamed. */
  readonly code: string;
  readonly kind: LintKind;
  readonly namespace: string;
  readonly name: string;
  /** What is wrong, naming the construct. */
  readonly message: string;
  /** How to fix it. */
  readonly hint: string;
  /** The manifest file, when known. */
  readonly source?: string;
}

/** Codes (comma or space separated) a person chose to accept on this object: its findings of those codes are dropped. */
export const ANNOTATION_LINT_IGNORE = 'acl.policyagent.dev/lint-ignore';

/** Findings of one object are listed in this kind order (as render lists problems), then by name. */
const KIND_RANK: Readonly<Record<LintKind, number>> = { Rule: 0, Directory: 1, Connector: 2, Bundle: 3 };
const CHECK_RANK = new Map(CHECKS.map((c, i) => [c.code, i]));

function ignoredCodes(raw: Readonly<Record<string, unknown>>): ReadonlySet<string> | undefined {
  const metadata = raw['metadata'];
  const annotations = isObject(metadata) ? metadata['annotations'] : undefined;
  const value = isObject(annotations) ? annotations[ANNOTATION_LINT_IGNORE] : undefined;
  return typeof value === 'string' ? new Set(value.split(/[\s,]+/).filter(Boolean)) : undefined;
}

function findingOf(code: string, d: Draft): Finding {
  const { kind, namespace, name, source } = d.object;
  return { code, kind, namespace, name, message: d.message, hint: d.hint, ...(source === undefined ? {} : { source }) };
}

function compare(a: Finding, b: Finding): number {
  if (a.namespace !== b.namespace) return a.namespace < b.namespace ? -1 : 1;
  if (a.kind !== b.kind) return KIND_RANK[a.kind] - KIND_RANK[b.kind];
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return (CHECK_RANK.get(a.code) ?? 0) - (CHECK_RANK.get(b.code) ?? 0);
}

/** Objects between two yields: a new spec costs about 0.1 ms (its condition compiled), a known one far less. */
const OBJECTS_PER_STEP = 32;

/** lintObjects as steps (a yield every few objects and after each check), for callers that share the event loop. */
export function* lintSteps(objects: readonly LintObject[]): Generator<void, Finding[]> {
  const byTenant = new Map<string, Entry<Facts>[]>();
  for (let i = 0; i < objects.length; i++) {
    const object = objects[i] as LintObject;
    const facts = factsOf(object.kind, object.raw);
    if (facts) {
      const entries = byTenant.get(object.namespace);
      if (entries) entries.push({ object, facts });
      else byTenant.set(object.namespace, [{ object, facts }]);
    }
    if (i % OBJECTS_PER_STEP === OBJECTS_PER_STEP - 1) yield;
  }
  const findings: Finding[] = [];
  for (const [namespace, entries] of byTenant) {
    const tenant = tenantOf(namespace, entries);
    for (const check of CHECKS) {
      for (const d of check.run(tenant)) if (!ignoredCodes(d.object.raw)?.has(check.code)) findings.push(findingOf(check.code, d));
      yield;
    }
  }
  // Stable: one object's findings of one check keep the order the check gave them.
  return findings.sort(compare);
}

/** The findings of these objects (any namespaces; each namespace is linted as one tenant), in a deterministic order. */
export function lintObjects(objects: readonly LintObject[]): Finding[] {
  const steps = lintSteps(objects);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** A finding as every output words it: `Code: what is wrong. Fix: how` (the Warning condition, Events, webhook, CLI). */
export function findingText(f: Pick<Finding, 'code' | 'message' | 'hint'>): string {
  return `${f.code}: ${f.message}. Fix: ${f.hint}`;
}

/** The Warning condition's message: every finding's text, joined by "; ". */
export function findingsText(findings: readonly Finding[]): string {
  return findings.map(findingText).join('; ');
}

const FINDING_TEXT = /^([A-Z][A-Za-z]*): ([\s\S]*?)\. Fix: ([\s\S]*)$/;

/**
 * The findings a findingsText holds, read back (the console shows a Warning condition as a list); a
 * part that is not a finding's text (a message cut at its length limit) comes back as `{text}`.
 */
export function readFindingsText(
  text: string,
): ({ readonly code: string; readonly message: string; readonly hint: string } | { readonly text: string })[] {
  return text.split(/; (?=[A-Z][A-Za-z]*: )/).map((part) => {
    const m = FINDING_TEXT.exec(part);
    return m ? { code: m[1] ?? '', message: m[2] ?? '', hint: m[3] ?? '' } : { text: part };
  });
}

/** One line a person reads: file, object, code, what is wrong and how to fix it. */
export function formatFinding(f: Finding): string {
  return `${f.source ? `${f.source}: ` : ''}${f.kind} ${f.namespace}/${f.name}: ${findingText(f)}.`;
}
