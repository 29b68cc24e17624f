// A test file → the cases to decide: each case's request with the file's defaults merged under it and
// named entities put in, mapped onto the decision input exactly as the API maps a request (the service
// and AuthZEN shape through decisionInputOf, OPA's input shape through toDecisionInput), and its
// tenant, rule and bundles checked against what the manifests hold. Every problem is an error at the
// key or case concerned.
import { isObject } from '../api/index.ts';
// The one mapping of POST /authorization's body (imported from its file, not http/index.ts, so that
// `acl-operator test` does not load the HTTP stack).
import { decisionInputOf } from '../authzen/index.ts';
import { toDecisionInput, type DecisionInput } from '../policy/index.ts';
import { casePrefix, closest, issueErrors } from './issues.ts';
import { TestFile, type Defaults, type TestCase } from './schema.ts';
import type { FileError, Path, Position, SourceFile } from './source.ts';
import type { World } from './world.ts';

export type Decision = 'allow' | 'deny';

export interface ResolvedCase extends Position {
  readonly file: string;
  readonly name: string;
  readonly tenant: string;
  /** What the native evaluator and OPA decide: the request as the API maps it. */
  readonly input: DecisionInput;
  readonly expect: { readonly decision: Decision; readonly rule?: string; readonly reason?: string };
  /** Bundles named by the case; undefined: every bundle of the tenant that admits it. */
  readonly bundles: readonly string[] | undefined;
}

type Entities = Readonly<Record<string, Record<string, unknown>>>;

/** A problem of one case: where (a path in the file, at a key or a value) and what. A class, so no value of a request can pass for one. */
class Problem {
  readonly path: Path;
  readonly at: 'key' | 'value';
  readonly message: string;
  constructor(path: Path, at: 'key' | 'value', message: string) {
    this.path = path;
    this.at = at;
    this.message = message;
  }
}

const SERVICE_PARTS = ['subject', 'action', 'resource', 'context'] as const;

/** Sets a key, even `__proto__`, as a plain data property. */
function put(out: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The defaults under a case's value: mappings merged key by key (the case wins), anything else replaced. */
export function merge(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  if (!isObject(base) || !isObject(over)) return over;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(base)) put(out, k, base[k]);
  for (const k of Object.keys(over)) put(out, k, merge(base[k], over[k]));
  return out;
}

/** A subject or resource: a name of `entities:` stands for that entity. */
function entityOf(value: unknown, entities: Entities | undefined, path: Path): unknown {
  if (typeof value !== 'string') return value;
  const found = entities !== undefined && Object.hasOwn(entities, value) ? entities[value] : undefined;
  if (found !== undefined) return found;
  const known = Object.keys(entities ?? {});
  const near = closest(value, known);
  const names = `${String(path[path.length - 1])} names the entity ${JSON.stringify(value)}`;
  return new Problem(
    path,
    'key',
    known.length === 0
      ? `${names}, but the file has no entities:`
      : `${names}, which entities: does not define${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}; it defines ${known.join(', ')}`,
  );
}

/** The body of a request in the service's shape: each part merged over its default, entities put in. */
function serviceBody(c: TestCase, at: Path, defaults: Defaults, entities: Entities | undefined): Record<string, unknown> | Problem {
  const body: Record<string, unknown> = {};
  for (const part of SERVICE_PARTS) {
    const entity = part === 'subject' || part === 'resource';
    const base = entity ? entityOf(defaults[part], entities, ['defaults', part]) : defaults[part];
    if (base instanceof Problem) return base;
    const value = entity ? entityOf(c[part], entities, [...at, part]) : c[part];
    if (value instanceof Problem) return value;
    const merged = merge(base, value);
    if (merged !== undefined) body[part] = merged;
  }
  return body;
}

/** The decision input of one case (its request merged over the defaults), as the API would map it. */
function inputOf(c: TestCase, at: Path, defaults: Defaults, entities: Entities | undefined): DecisionInput | Problem {
  const own = SERVICE_PARTS.filter((k) => c[k] !== undefined);
  if (c.input !== undefined && own.length > 0) {
    return new Problem(
      [...at, 'input'],
      'key',
      `a case gives its request as ${SERVICE_PARTS.join(', ')} or as input, not both (it has ${own.join(', ')})`,
    );
  }
  if (c.input !== undefined || (own.length === 0 && defaults.input !== undefined)) {
    const mapped = toDecisionInput(merge(defaults.input, c.input));
    return typeof mapped === 'string'
      ? new Problem([...at, 'input'], c.input === undefined ? 'value' : 'key', `input is not a decision input: ${mapped}`)
      : mapped;
  }
  if (own.length === 0 && SERVICE_PARTS.every((k) => defaults[k] === undefined)) {
    return new Problem(at, 'value', 'no request: give subject, action and resource (and context), or input');
  }
  const body = serviceBody(c, at, defaults, entities);
  if (body instanceof Problem) return body;
  const mapped = decisionInputOf(body);
  if (mapped.ok) return mapped.input;
  // Point at the part the API names, when the case has it (else it came from the defaults).
  const part = SERVICE_PARTS.find((p) => mapped.message.startsWith(p) && c[p] !== undefined);
  return new Problem(
    part ? [...at, part] : at,
    part ? 'key' : 'value',
    `the request is refused as POST /authorization refuses it: ${mapped.message}`,
  );
}

/** The tenant and bundles of a case, and its rule, checked against the world. */
function targetOf(
  c: TestCase,
  at: Path,
  file: TestFile,
  world: World,
  manifests: string,
): { tenant: string; bundles: string[] | undefined } | Problem {
  const tenant = c.tenant ?? file.tenant;
  if (tenant === undefined) return new Problem(at, 'value', 'no tenant: set tenant: at the top of the file or in the case');
  const facts = world.get(tenant);
  if (facts === undefined) {
    const known = [...world.keys()];
    return new Problem(
      c.tenant !== undefined ? [...at, 'tenant'] : ['tenant'],
      'key',
      `tenant ${JSON.stringify(tenant)} has no Rule, Connector, Bundle or Directory in ${manifests}${known.length > 0 ? ` (its tenants: ${known.join(', ')})` : ''}`,
    );
  }
  if (c.rule !== undefined && c.expect === 'deny') {
    return new Problem(
      [...at, 'rule'],
      'key',
      'rule: names the rule that allows, and this case expects deny (reason: checks why a request is denied)',
    );
  }
  if (c.rule !== undefined && !facts.rules.has(c.rule)) {
    const near = closest(c.rule, [...facts.rules.keys()]);
    return new Problem(
      [...at, 'rule'],
      'key',
      `rule ${JSON.stringify(c.rule)} is not a Rule of tenant ${tenant}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}`,
    );
  }
  const bundles = c.bundle === undefined ? undefined : typeof c.bundle === 'string' ? [c.bundle] : c.bundle;
  const unknown = bundles?.find((b) => !facts.bundles.has(b));
  if (unknown !== undefined) {
    const known = [...facts.bundles.keys()];
    return new Problem(
      [...at, 'bundle'],
      'key',
      `bundle ${JSON.stringify(unknown)} is not a Bundle of tenant ${tenant}${known.length > 0 ? ` (its bundles: ${known.join(', ')})` : ' (it has none)'}`,
    );
  }
  return { tenant, bundles };
}

/** One case ready to decide, or its first problem. */
function resolveCase(
  c: TestCase,
  at: Path,
  where: Position,
  file: TestFile,
  world: World,
  manifests: string,
  source: SourceFile,
): ResolvedCase | Problem {
  const input = inputOf(c, at, file.defaults ?? {}, file.entities);
  if (input instanceof Problem) return input;
  const target = targetOf(c, at, file, world, manifests);
  if (target instanceof Problem) return target;
  const expect = {
    decision: c.expect,
    ...(c.rule !== undefined ? { rule: c.rule } : {}),
    ...(c.reason !== undefined ? { reason: c.reason } : {}),
  };
  return { file: source.file, ...where, name: c.name, tenant: target.tenant, input, expect, bundles: target.bundles };
}

/** The cases of a test file, or every error found in it. */
export function resolveCases(source: SourceFile, world: World, manifests: string): { cases: ResolvedCase[]; errors: FileError[] } {
  const fail = (errors: FileError[]): { cases: ResolvedCase[]; errors: FileError[] } => ({ cases: [], errors });
  if (source.value === null || source.value === undefined) {
    return fail([
      { file: source.file, line: 1, column: 1, message: 'the file is empty: a test file holds cases: (docs/testing.md#test-files)' },
    ]);
  }
  const parsed = TestFile.safeParse(source.value);
  if (!parsed.success) return fail(issueErrors(source, parsed.error.issues));
  const file = parsed.data;
  const cases: ResolvedCase[] = [];
  const errors: FileError[] = [];
  const firstLine = new Map<string, number>();
  const said = new Set<string>();
  const report = (p: Problem): void => {
    // A problem of the file's own keys (its tenant, its defaults) is said once, not once per case.
    const inCase = p.path[0] === 'cases';
    const message = inCase ? `${casePrefix(source.value, p.path)}${p.message}` : p.message;
    if (!inCase && said.has(message)) return;
    said.add(message);
    errors.push({ file: source.file, ...source.position(p.path, p.at), message });
  };
  file.cases.forEach((c, i) => {
    const at: Path = ['cases', i];
    const where = source.position(at);
    const seen = firstLine.get(c.name);
    if (seen !== undefined) {
      report(new Problem([...at, 'name'], 'value', `the name is used twice in this file (first at line ${seen})`));
      return;
    }
    firstLine.set(c.name, where.line);
    const resolved = resolveCase(c, at, where, file, world, manifests, source);
    if (resolved instanceof Problem) report(resolved);
    else cases.push(resolved);
  });
  return { cases, errors };
}
