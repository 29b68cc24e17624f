// Deciding the cases: natively exactly as POST /authorization decides (the tenant's rule index and
// directory, decide()), then, when OPA was asked, its decisions set beside them. A case fails when the
// native decision misses its expectation; a decision of OPA that differs from the native one is a
// disagreement, a failure of its own kind.
import { decide, matchingRules, type DecisionInput } from '../policy/index.ts';
import type { Decision, ResolvedCase } from './cases.ts';
import type { TenantWorld, World } from './world.ts';

export interface NativeDecision {
  readonly decision: Decision;
  /** The allowing rule's name (absent on deny). */
  readonly rule?: string;
  /** The evaluator's reasons: the allowing rule, or what each candidate rule missed. */
  readonly reasons: readonly string[];
}

export interface OpaDecision {
  /** `<tenant>/<bundle>` */
  readonly bundle: string;
  readonly decision: Decision;
}

export type FailureKind = 'expectation' | 'disagreement';

export interface Failure {
  readonly kind: FailureKind;
  readonly message: string;
}

export interface CaseResult {
  readonly case: ResolvedCase;
  readonly native: NativeDecision;
  /** OPA's decisions, one per bundle checked; undefined when OPA was not asked, [] when no bundle admits the case. */
  readonly opa: readonly OpaDecision[] | undefined;
  readonly failures: readonly Failure[];
}

const word = (allow: boolean): Decision => (allow ? 'allow' : 'deny');

function describeNative(n: NativeDecision): string {
  return n.rule !== undefined ? `allow (rule ${n.rule})` : n.decision;
}

/** Why an expected rule did not decide: it is not deployed, it lost to a rule earlier by name, or it does not match. */
function whyNotRule(rule: string, tenant: TenantWorld | undefined, input: DecisionInput): string {
  const phase = tenant?.rules.get(rule);
  if (phase !== 'Enforced') return `rule ${rule} is ${phase ?? 'not there'}: only an Enforced rule decides`;
  const matching = tenant ? matchingRules(tenant.index, input, tenant.directory) : [];
  return matching.includes(rule) ? `rule ${rule} matches too, but the first matching rule by name decides` : `rule ${rule} does not match`;
}

/** What misses the expectation, in one sentence each. */
function expectationFailures(c: ResolvedCase, native: NativeDecision, world: World): Failure[] {
  const { expect } = c;
  const tenant = world.get(c.tenant);
  if (native.decision !== expect.decision) {
    const note = expect.rule !== undefined ? ` (${whyNotRule(expect.rule, tenant, c.input)})` : '';
    return [{ kind: 'expectation', message: `expected ${expect.decision}, got ${describeNative(native)}${note}` }];
  }
  const failures: Failure[] = [];
  if (expect.rule !== undefined && native.rule !== expect.rule) {
    failures.push({
      kind: 'expectation',
      message: `expected rule ${expect.rule} to allow, but rule ${native.rule ?? '?'} did (${whyNotRule(expect.rule, tenant, c.input)})`,
    });
  }
  const { reason } = expect;
  if (reason !== undefined && !native.reasons.some((r) => r.includes(reason))) {
    failures.push({ kind: 'expectation', message: `expected a reason containing ${JSON.stringify(reason)}; none does` });
  }
  return failures;
}

/** Every case decided by the native evaluator, in order. */
export function decideNatively(cases: readonly ResolvedCase[], world: World): CaseResult[] {
  return cases.map((c) => {
    const tenant = world.get(c.tenant);
    // resolveCases only lets through cases of tenants the world has.
    if (tenant === undefined) throw new Error(`no tenant ${c.tenant} in the world`);
    const d = decide(tenant.index, c.input, tenant.directory);
    const native: NativeDecision = d.rule
      ? { decision: 'allow', rule: d.rule.model.name, reasons: d.reasons }
      : { decision: word(d.allow), reasons: d.reasons };
    return { case: c, native, opa: undefined, failures: expectationFailures(c, native, world) };
  });
}

/** The results with OPA's decisions (per result, in order) added, and a disagreement for each that differs. */
export function withOpaDecisions(
  results: readonly CaseResult[],
  decisions: readonly (readonly OpaDecision[])[],
  opaVersion: string,
): CaseResult[] {
  return results.map((r, i) => {
    const opa = decisions[i] ?? [];
    const differing = opa.filter((o) => o.decision !== r.native.decision);
    if (differing.length === 0) return { ...r, opa };
    const message = `OPA ${opaVersion} decides ${differing.map((o) => `${o.decision} on bundle ${o.bundle}`).join(', ')}; the native evaluator ${describeNative(r.native)}`;
    return { ...r, opa, failures: [...r.failures, { kind: 'disagreement' as const, message }] };
  });
}
