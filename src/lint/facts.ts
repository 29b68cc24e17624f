// What lint knows of one object, worked out once per spec: the spec validated by its schema in api/,
// a Rule's condition compiled by the CEL front end (src/policy), and the few facts the checks read.
// Sources replace an object's spec when it changes, so facts are cached on the spec object itself
// (a WeakMap): a tenant of 10,000 rules is linted again at the cost of its cross-object checks only.
import { createHash } from 'node:crypto';
import { BundleSpec, ConnectorSpec, Directory, isObject, RuleSpec } from '../api/index.ts';
import { compileCondition, type Cond, pathsOf, pathText } from '../policy/index.ts';
import { type NegatedPath, negatedOnly } from './negation.ts';

export type LintKind = 'Rule' | 'Connector' | 'Bundle' | 'Directory';

/** Which top-level keys of principal (or resource) a condition reads: their names, or all of them. */
export type Reads = ReadonlySet<string> | 'all';

/** A condition path through `properties`, as the request's shape would have it (properties are flattened). */
export interface PropertiesPath {
  /** As written, e.g. `principal.properties.email`. */
  readonly text: string;
  /** Where the value really is, e.g. `principal.email`; the root alone when the whole `properties` is read. */
  readonly flattened: string;
  /** `action.properties.x` is the AuthZEN shape of `actionProperties.x`. */
  readonly root: 'principal' | 'resource' | 'action';
}

export interface RuleFacts {
  readonly kind: 'Rule';
  /** Whether the manifest wrote spec.state (without it the schema makes the rule a Draft). */
  readonly stateWritten: boolean;
  readonly state: RuleSpec['state'];
  /** Enforced or Approved: decided by the service and put into the bundles that select it. */
  readonly deployed: boolean;
  readonly subjectType: string;
  readonly resourceType: string;
  /** The actions, sorted, for messages. */
  readonly actions: readonly string[];
  /** A digest of subject type, actions, resource type and compiled condition: equal for rules that decide alike. */
  readonly signature: string;
  /** The properties of subject-type entities the condition reads (principal.X), and of resource-type ones (resource.X). */
  readonly principalReads: Reads;
  readonly resourceReads: Reads;
  /** Distinct paths through principal.properties or resource.properties, in the order written. */
  readonly propertiesPaths: readonly PropertiesPath[];
  /** Paths the condition reads only beneath a `!`, unguarded (negation.ts). */
  readonly negatedPaths: readonly NegatedPath[];
}

export interface BundleFacts {
  readonly kind: 'Bundle';
  readonly connector: string;
  /** spec.entityTypes without repeats, in the order written; empty selects every rule. */
  readonly entityTypes: readonly string[];
  readonly typeSet: ReadonlySet<string>;
}

export interface ConnectorFacts {
  readonly kind: 'Connector';
}

export interface DirectoryFacts {
  readonly kind: 'Directory';
  /** Each entity type listed, sorted, with the property names its entities carry (sorted). */
  readonly types: ReadonlyMap<string, readonly string[]>;
}

export type Facts = RuleFacts | BundleFacts | ConnectorFacts | DirectoryFacts;

/** What a compiled condition tells lint. */
interface ConditionFacts {
  readonly key: string;
  readonly paths: readonly ReturnType<typeof pathsOf>[number][];
  readonly negated: readonly NegatedPath[];
}

/** The facts of each spec object, with the kind they were made for; null: the spec is invalid. */
const bySpec = new WeakMap<object, { kind: LintKind; facts: Facts | null }>();

/**
 * Facts by compiled condition: compileCondition keeps its results by text (bounded, shared with the
 * controllers), so the same text gives the same Cond and this needs no bound of its own.
 */
const byCondition = new WeakMap<Cond, ConditionFacts>();

/** The facts of a condition's text; null when it does not compile. */
function conditionFacts(text: string): ConditionFacts | null {
  const compiled = compileCondition(text);
  if (!compiled.ok) return null;
  const known = byCondition.get(compiled.cond);
  if (known !== undefined) return known;
  const paths = pathsOf(compiled.cond);
  const negated = negatedOnly(compiled.cond);
  const facts = {
    key: digest(JSON.stringify(compiled.cond)),
    paths: paths.length > 0 ? paths : NONE,
    negated: negated.length > 0 ? negated : NONE,
  };
  byCondition.set(compiled.cond, facts);
  return facts;
}

/**
 * What equality is tested on is kept as a digest: a condition's JSON is hundreds of characters, and
 * every rule's facts stay in memory for as long as its spec does.
 */
function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}

/** The empty list and set every rule's facts share when they have nothing to list (facts are read-only). */
const NONE: readonly never[] = Object.freeze([]);
const NO_READS: ReadonlySet<string> = new Set();

/** The same as a rule without one: a condition `true` (whatever its spelling) is no condition. */
const NO_CONDITION = digest(JSON.stringify({ kind: 'const', value: true }));

/** Adds what one path reads to `reads`: a top-level key, or (the whole entity) every key. */
function addRead(reads: Set<string> | 'all', keys: readonly (string | number)[]): Set<string> | 'all' {
  if (reads === 'all') return reads;
  const first = keys[0];
  if (first === undefined) return 'all';
  // type and id are the request's own, never directory properties; a number indexes no map.
  if (typeof first === 'string' && first !== 'type' && first !== 'id') reads.add(first);
  return reads;
}

function ruleFacts(rawSpec: Record<string, unknown>): RuleFacts | null {
  const parsed = RuleSpec.safeParse(rawSpec);
  if (!parsed.success) return null;
  const spec = parsed.data;
  const condition = spec.condition === undefined ? undefined : conditionFacts(spec.condition);
  if (condition === null) return null;
  let principalReads: Set<string> | 'all' = new Set();
  let resourceReads: Set<string> | 'all' = new Set();
  const propertiesPaths = new Map<string, PropertiesPath>();
  for (const p of condition?.paths ?? []) {
    if (p.root === 'principal') principalReads = addRead(principalReads, p.keys);
    else if (p.root === 'resource') resourceReads = addRead(resourceReads, p.keys);
    if (p.keys[0] !== 'properties' || (p.root !== 'principal' && p.root !== 'resource' && p.root !== 'action')) continue;
    const text = pathText(p);
    // An AuthZEN action's properties are actionProperties; an entity's are its own attributes.
    const flattened = pathText({ root: p.root === 'action' ? 'actionProperties' : p.root, keys: p.keys.slice(1) });
    if (!propertiesPaths.has(text)) propertiesPaths.set(text, { text, root: p.root, flattened });
  }
  // The spec's own list when it is sorted already (facts never change it).
  const actions = spec.actions.every((a, i) => i === 0 || (spec.actions[i - 1] as string) <= a) ? spec.actions : [...spec.actions].sort();
  return {
    kind: 'Rule',
    stateWritten: Object.hasOwn(rawSpec, 'state'),
    state: spec.state,
    deployed: spec.state === 'Enforced' || spec.state === 'Approved',
    subjectType: spec.subjectType,
    resourceType: spec.resourceType,
    actions,
    signature: digest(JSON.stringify([spec.subjectType, actions, spec.resourceType, condition?.key ?? NO_CONDITION])),
    principalReads: principalReads !== 'all' && principalReads.size === 0 ? NO_READS : principalReads,
    resourceReads: resourceReads !== 'all' && resourceReads.size === 0 ? NO_READS : resourceReads,
    propertiesPaths: propertiesPaths.size > 0 ? [...propertiesPaths.values()] : NONE,
    negatedPaths: condition?.negated ?? NONE,
  };
}

function bundleFacts(rawSpec: Record<string, unknown>): BundleFacts | null {
  const parsed = BundleSpec.safeParse(rawSpec);
  if (!parsed.success) return null;
  const typeSet = new Set(parsed.data.entityTypes ?? []);
  return { kind: 'Bundle', connector: parsed.data.connector, entityTypes: [...typeSet], typeSet };
}

function directoryFacts(rawSpec: Record<string, unknown>): DirectoryFacts | null {
  const parsed = Directory.shape.spec.safeParse(rawSpec);
  return parsed.success ? entityFacts(parsed.data.entities) : null;
}

function entityFacts(entities: readonly { readonly type: string; readonly properties: object }[]): DirectoryFacts {
  const types = new Map<string, Set<string>>();
  for (const e of entities) {
    const props = types.get(e.type) ?? new Set<string>();
    types.set(e.type, props);
    for (const k of Object.keys(e.properties)) props.add(k);
  }
  const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return { kind: 'Directory', types: new Map([...types.keys()].sort(byName).map((t) => [t, [...(types.get(t) ?? [])].sort(byName)])) };
}

/**
 * The facts of a valid Directory whose entities the controller has read (`entities`: each with the
 * property names as written), so that its spec is not parsed whole again after an edit.
 */
export function rememberDirectoryFacts(
  raw: Readonly<Record<string, unknown>>,
  entities: readonly { readonly type: string; readonly properties: object }[],
): void {
  const spec = raw['spec'];
  if (isObject(spec)) bySpec.set(spec, { kind: 'Directory', facts: entityFacts(entities) });
}

function compute(kind: LintKind, spec: Record<string, unknown>): Facts | null {
  switch (kind) {
    case 'Rule':
      return ruleFacts(spec);
    case 'Bundle':
      return bundleFacts(spec);
    case 'Directory':
      return directoryFacts(spec);
    case 'Connector':
      return ConnectorSpec.safeParse(spec).success ? { kind: 'Connector' } : null;
  }
}

/** The facts of an object's spec as written; null when the spec is invalid (an error its status states, not lint). */
export function factsOf(kind: LintKind, raw: Readonly<Record<string, unknown>>): Facts | null {
  const spec = raw['spec'];
  if (!isObject(spec)) return null;
  const known = bySpec.get(spec);
  if (known && known.kind === kind) return known.facts;
  const facts = compute(kind, spec);
  bySpec.set(spec, { kind, facts });
  return facts;
}
