// The Verify Panel's playground (docs/console.md, "Rule and Verify Panel"): a request typed or picked
// in the form, read exactly as POST /authorization reads its body (strict JSON, then the API's one
// mapping, which takes the service's and AuthZEN's shape), decided as the API decides it (decide()
// over the tenant's rule index and directory), and, when an OPA is configured, decided again by that
// OPA on the very bundle bytes of each bundle that carries the rule. Everything but runOpa is pure.
import { z } from 'zod';
import type { RuleSpec } from '../api/index.ts';
import { entityTypesTake } from '../bundle/index.ts';
import { decisionInputOf } from '../authzen/index.ts';
import {
  buildIndex,
  compileRule,
  decide,
  EMPTY_DIRECTORY,
  parseExactJson,
  ruleModel,
  type DecisionInput,
  type EntityDirectory,
  type RuleModel,
} from '../policy/index.ts';
import { opaAllowsOnBundle, type Opa } from '../opa/index.ts';
import type { BundleEntry, Snapshot } from '../store/index.ts';

/** What one tenant serves: its rule index, directory and bundles. */
export type TenantServed = NonNullable<ReturnType<Snapshot['tenants']['get']>>;

/** The longest request the playground reads, in characters (the form itself is capped at 256 KB). */
export const MAX_REQUEST_CHARS = 64 * 1024;

export type ReadRequest = { readonly ok: true; readonly input: DecisionInput } | { readonly ok: false; readonly message: string };

/** A request typed in the playground: its decision input, or what POST /authorization would answer 400 with. */
export function readRequest(text: string): ReadRequest {
  if (text.trim() === '') return { ok: false, message: 'Type a request (a JSON object) or pick an example.' };
  if (text.length > MAX_REQUEST_CHARS) {
    return { ok: false, message: `The request is ${text.length} characters; the playground reads at most ${MAX_REQUEST_CHARS}.` };
  }
  const parsed = parseExactJson(text);
  if (!parsed.ok) return { ok: false, message: `Not JSON: ${parsed.message}` };
  const mapped = decisionInputOf(parsed.value);
  return mapped.ok ? mapped : { ok: false, message: `POST /authorization would refuse it (400): ${mapped.message}` };
}

/** What the rule in view did with the request. */
export type ThisRule =
  /** It allowed: the first matching rule by name. */
  | { readonly kind: 'decided' }
  /** It matches, but another rule earlier by name decided. */
  | { readonly kind: 'matched-too'; readonly by: string }
  /** A candidate (types and action fit) whose condition is not true: why. */
  | { readonly kind: 'missed'; readonly reason: string }
  /** Its subject type, actions or resource type do not fit the request. */
  | { readonly kind: 'not-candidate' }
  /** Not in force (Draft, Proposed, …, or invalid): what it would do if it were. */
  | { readonly kind: 'not-deployed'; readonly wouldAllow: boolean; readonly reason: string | undefined };

export interface NativeVerdict {
  readonly allow: boolean;
  /** The allowing rule's name (allow only). */
  readonly rule: string | undefined;
  /** The evaluator's reasons: the allowing rule, or what each candidate rule missed. */
  readonly reasons: readonly string[];
  readonly thisRule: ThisRule;
}

const fits = (model: Pick<RuleModel, 'subjectType' | 'actions' | 'resourceType'>, input: DecisionInput): boolean =>
  input.principal['type'] === model.subjectType && model.actions.includes(input.action) && input.resource['type'] === model.resourceType;

/** The rule's model from a spec (its current one, or the last good one its translation recorded); undefined: it does not compile. */
export function modelOf(namespace: string, name: string, spec: RuleSpec): RuleModel | undefined {
  const made = ruleModel({ apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Rule', metadata: { namespace, name }, spec });
  return made.ok ? made.model : undefined;
}

/** What the rule alone decides (as if Enforced): whether it allows, and its reason when not. */
function alone(tenant: string, model: RuleModel, input: DecisionInput, directory: EntityDirectory): { allow: boolean; reason: string } {
  const d = decide(buildIndex(tenant, [compileRule({ ...model, state: 'Enforced' })]), input, directory);
  return { allow: d.allow, reason: d.reasons[0] ?? '' };
}

/**
 * The request decided as POST /authorization decides it for `tenant`, and what the rule `name` did.
 * `model` is the rule as it would be in force (its current spec, or the last good one); undefined
 * when it has none (an invalid spec never translated).
 */
export function decideHere(
  served: TenantServed | undefined,
  tenant: string,
  name: string,
  model: RuleModel | undefined,
  input: DecisionInput,
): NativeVerdict {
  const index = served?.index ?? buildIndex(tenant, []);
  const directory = served?.directory ?? EMPTY_DIRECTORY;
  const d = decide(index, input, directory);
  const verdict = { allow: d.allow, rule: d.rule?.model.name, reasons: d.reasons };
  const inForce = index.rules.find((r) => r.model.name === name)?.model;
  const own = inForce ?? model;
  if (own === undefined || !fits(own, input)) return { ...verdict, thisRule: { kind: 'not-candidate' } };
  const itself = alone(tenant, own, input, directory);
  if (inForce === undefined) {
    return { ...verdict, thisRule: { kind: 'not-deployed', wouldAllow: itself.allow, reason: itself.allow ? undefined : itself.reason } };
  }
  if (d.rule?.model.name === name) return { ...verdict, thisRule: { kind: 'decided' } };
  if (itself.allow) return { ...verdict, thisRule: { kind: 'matched-too', by: d.rule?.model.name ?? '?' } };
  return { ...verdict, thisRule: { kind: 'missed', reason: itself.reason } };
}

export interface Example {
  readonly label: string;
  /** The request as JSON text, formatted. */
  readonly text: string;
}

const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/**
 * Requests a person can start from: the rule's subject type, each of its actions and its resource
 * type in the service's shape, one in AuthZEN's shape, and a couple naming entities of the tenant's
 * directory (whose properties a decision merges in).
 */
export function examplesFor(spec: Pick<RuleModel, 'subjectType' | 'actions' | 'resourceType'>, directory: EntityDirectory): Example[] {
  const subject = { type: spec.subjectType, id: 'alice', properties: {} };
  const resource = { type: spec.resourceType, id: 'example-1', properties: {} };
  const out: Example[] = spec.actions.map((action) => ({
    label: `${spec.subjectType} ${action} ${spec.resourceType}`,
    text: pretty({ subject, action, resource, context: {} }),
  }));
  const first = spec.actions[0];
  if (first !== undefined) {
    out.push({
      label: `${spec.subjectType} ${first} ${spec.resourceType} (AuthZEN shape)`,
      text: pretty({ subject, action: { name: first, properties: {} }, resource, context: {} }),
    });
  }
  const subjects = directory.ids(spec.subjectType).slice(0, 2);
  const resourceId = directory.ids(spec.resourceType)[0];
  for (const id of subjects) {
    for (const action of spec.actions.slice(0, 1)) {
      const r = resourceId === undefined ? resource : { type: spec.resourceType, id: resourceId };
      out.push({
        label: `${id} ${action} ${r.id} (from the directory)`,
        text: pretty({ subject: { type: spec.subjectType, id }, action, resource: r }),
      });
    }
  }
  return out;
}

/** The tenant's built bundles that carry the rule (it is among the rules they were built from), by name. */
export function bundlesCarrying(served: TenantServed | undefined, name: string): BundleEntry[] {
  return [...(served?.bundles.values() ?? [])]
    .filter((b) => b.source.rules.some((r) => r.name === name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const EntityTypes = z.array(z.string());

/** Whether a bundle's entityTypes filter keeps the rules that could decide this request (else OPA there decides without them). */
export function bundleAdmits(bundle: BundleEntry, input: DecisionInput): boolean {
  const parsed = EntityTypes.safeParse(JSON.parse(bundle.source.entityTypes));
  const types = new Set(parsed.success ? parsed.data : []);
  const st = input.principal['type'];
  const rt = input.resource['type'];
  return entityTypesTake(types, typeof st === 'string' ? st : '', typeof rt === 'string' ? rt : '');
}

export interface OpaRow {
  readonly bundle: string;
  readonly revision: number;
  /** OPA's decision, or why it has none. */
  readonly outcome: { readonly allow: boolean } | { readonly error: string };
  /** Its filter keeps the request's types: OPA must then decide as the service does. */
  readonly admitted: boolean;
}

/** Playground runs of OPA at one time: a run is one OPA process per bundle. */
const MAX_RUNNING = 2;
let running = 0;

/**
 * The request through OPA on each bundle's bytes, one `opa eval` at a time; undefined when two runs
 * are already under way (the page says OPA is busy rather than start more processes).
 */
export async function runOpa(opa: Opa, bundles: readonly BundleEntry[], input: DecisionInput): Promise<OpaRow[] | undefined> {
  if (running >= MAX_RUNNING) return undefined;
  running++;
  try {
    const rows: OpaRow[] = [];
    for (const b of bundles) {
      const allows = await opaAllowsOnBundle(opa, b.built.bytes, [input], `${b.tenant}/${b.name}`);
      const first = typeof allows === 'string' ? undefined : allows[0];
      rows.push({
        bundle: b.name,
        revision: b.built.revision,
        outcome: first === undefined ? { error: typeof allows === 'string' ? allows : 'OPA gave no decision' } : { allow: first },
        admitted: bundleAdmits(b, input),
      });
    }
    return rows;
  } finally {
    running--;
  }
}
