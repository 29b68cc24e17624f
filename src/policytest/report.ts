// What a test run found, and the text report a person reads: a header (with any notes the caller
// adds, such as lint findings), one block per failing case (the request, expected and got, OPA's
// decisions, the evaluator's explanation), a line per file and a summary.
import type { Opa } from '../opa/index.ts';
import type { CaseResult, NativeDecision } from './run.ts';

export interface TestReport {
  /** The manifests folder, as given. */
  readonly manifests: string;
  /** The test files, as shown, in the order they ran. */
  readonly files: readonly string[];
  readonly results: readonly CaseResult[];
  /** The OPA that checked the bundles, when one did. */
  readonly opa: Opa | undefined;
  /** Extra lines for the report's header (e.g. lint findings). */
  readonly notes: readonly string[];
  /** Time spent reading the test files and deciding (natively and in OPA). */
  readonly seconds: number;
}

export type CaseStatus = 'passed' | 'failed' | 'disagreement';

export interface Summary {
  readonly files: number;
  readonly cases: number;
  readonly passed: number;
  /** Cases whose native decision misses the expectation (whatever OPA said). */
  readonly failed: number;
  /** Cases that meet the expectation natively but where OPA decides otherwise. */
  readonly disagreements: number;
  /** Cases no bundle of their tenant admits (undefined when OPA was not asked). */
  readonly notCheckedByOpa: number | undefined;
  readonly seconds: number;
  readonly casesPerSecond: number;
}

/** A failed expectation wins over a disagreement: the case's block shows both. */
export function statusOf(r: CaseResult): CaseStatus {
  if (r.failures.some((f) => f.kind === 'expectation')) return 'failed';
  return r.failures.length > 0 ? 'disagreement' : 'passed';
}

export function summarize(report: TestReport): Summary {
  let passed = 0;
  let failed = 0;
  let disagreements = 0;
  let unchecked = 0;
  for (const r of report.results) {
    const s = statusOf(r);
    if (s === 'passed') passed++;
    else if (s === 'failed') failed++;
    else disagreements++;
    if (r.opa !== undefined && r.opa.length === 0) unchecked++;
  }
  const cases = report.results.length;
  return {
    files: report.files.length,
    cases,
    passed,
    failed,
    disagreements,
    notCheckedByOpa: report.opa === undefined ? undefined : unchecked,
    seconds: report.seconds,
    casesPerSecond: report.seconds > 0 ? Math.round(cases / report.seconds) : 0,
  };
}

/** Whether the run passed: no failure and no disagreement. */
export function passed(report: TestReport): boolean {
  return report.results.every((r) => r.failures.length === 0);
}

const plural = (n: number, noun: string): string => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;

/** "allow (rule x)" or "deny". */
export function describeNative(n: NativeDecision): string {
  return n.rule !== undefined ? `allow (rule ${n.rule})` : n.decision;
}

/** The expectation in words: "allow by rule x, with a reason containing "y"". */
export function describeExpected(r: CaseResult): string {
  const { decision, rule, reason } = r.case.expect;
  return `${decision}${rule !== undefined ? ` by rule ${rule}` : ''}${reason !== undefined ? `, with a reason containing ${JSON.stringify(reason)}` : ''}`;
}

/** OPA's part of a case, in words; undefined when OPA was not asked. */
export function describeOpa(r: CaseResult): string | undefined {
  if (r.opa === undefined) return undefined;
  if (r.opa.length === 0) return `not checked: no bundle of tenant ${r.case.tenant} admits the case`;
  return r.opa.map((o) => `${o.decision} on bundle ${o.bundle}`).join(', ');
}

/** A labelled line of a case's block, the texts aligned. */
function row(label: string, text: string): string {
  const head = `${label}:`;
  return `${head.padEnd(Math.max(12, head.length + 1))}${text}`;
}

/** The lines that explain one case (without its header), shared by the text, JUnit and TAP reports. */
export function caseDetails(r: CaseResult, opa: Opa | undefined): string[] {
  const lines = [
    row('tenant', r.case.tenant),
    row('request', JSON.stringify(r.case.input)),
    row('expected', describeExpected(r)),
    row('got', describeNative(r.native)),
  ];
  const opaText = describeOpa(r);
  if (opaText !== undefined) lines.push(row(opa ? `OPA ${opa.version}` : 'OPA', opaText));
  const [first, ...more] = r.native.reasons;
  if (first !== undefined) lines.push(row('why', first), ...more.map((m) => `${''.padEnd(12)}${m}`));
  for (const f of r.failures) lines.push(row(f.kind === 'expectation' ? 'failed' : 'disagrees', f.message));
  return lines;
}

/** "examples/acme.test.yaml:14" */
export function locationOf(r: CaseResult): string {
  return `${r.case.file}:${r.case.line}`;
}

function header(report: TestReport): string[] {
  const s = summarize(report);
  const opa = report.opa
    ? `OPA ${report.opa.version} (${report.opa.binary}) on the bundles`
    : 'native evaluator only (--opa or OPA_BIN adds OPA)';
  return [
    `acl-operator test --manifests ${report.manifests}: ${plural(s.files, 'test file')}, ${plural(s.cases, 'case')}; ${opa}`,
    ...report.notes,
  ];
}

/** The summary line: counts and speed. */
export function summaryLine(report: TestReport): string {
  const s = summarize(report);
  const parts = [`${s.passed.toLocaleString('en-US')} passed`, `${s.failed.toLocaleString('en-US')} failed`];
  if (s.notCheckedByOpa !== undefined) {
    parts.push(`${plural(s.disagreements, 'disagreement')} with OPA`, `${s.notCheckedByOpa.toLocaleString('en-US')} not checked by OPA`);
  }
  return `${plural(s.cases, 'case')}: ${parts.join(', ')} (${s.casesPerSecond.toLocaleString('en-US')} cases/s)`;
}

/** The report a person reads. */
export function formatText(report: TestReport): string {
  const lines = header(report);
  for (const r of report.results) {
    const status = statusOf(r);
    if (status === 'passed') continue;
    lines.push(
      '',
      `${status === 'failed' ? 'FAIL' : 'DISAGREE'}  ${locationOf(r)}  ${r.case.name}`,
      ...caseDetails(r, report.opa).map((l) => `  ${l}`),
    );
  }
  lines.push('');
  for (const file of report.files) {
    const own = report.results.filter((r) => r.case.file === file);
    const bad = own.filter((r) => r.failures.length > 0).length;
    lines.push(`${file}: ${plural(own.length, 'case')}, ${bad === 0 ? 'all passed' : `${bad} not passed`}`);
  }
  lines.push(summaryLine(report));
  return `${lines.join('\n')}\n`;
}
