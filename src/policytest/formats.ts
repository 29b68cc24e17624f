// The reports for CI systems: JUnit XML (one testsuite per test file, one testcase per case), TAP
// version 13 (with a YAML block per failing case), and JSON (docs/testing.md gives its schema).
import { stringify } from 'yaml';
import {
  caseDetails,
  describeExpected,
  describeNative,
  describeOpa,
  locationOf,
  statusOf,
  summarize,
  summaryLine,
  type TestReport,
} from './report.ts';
import type { CaseResult } from './run.ts';

/** Characters XML 1.0 cannot hold, even escaped: replaced by U+FFFD. */
const NOT_XML = /[^\t\n\r\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

/** Text escaped for XML 1.0 (characters it cannot hold become U+FFFD). */
export function xml(text: string): string {
  return text
    .replace(NOT_XML, '\ufffd')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}

/** An attribute value keeps its line breaks and tabs. */
export function attr(text: string): string {
  return xml(text).replaceAll('\n', '&#10;').replaceAll('\r', '&#13;').replaceAll('\t', '&#9;');
}

function junitCase(r: CaseResult, report: TestReport): string {
  const open = `    <testcase name="${attr(r.case.name)}" classname="${attr(r.case.file)}" file="${attr(r.case.file)}" line="${r.case.line}">`;
  if (r.failures.length === 0) return `${open}</testcase>`;
  const type = statusOf(r) === 'failed' ? 'expectation' : 'disagreement';
  const message = r.failures.map((f) => f.message).join('; ');
  const body = [`${locationOf(r)}  ${r.case.name}`, ...caseDetails(r, report.opa)].join('\n');
  return `${open}\n      <failure message="${attr(message)}" type="${type}">${xml(body)}</failure>\n    </testcase>`;
}

/** JUnit XML as Jenkins, GitLab and GitHub Actions reporters read it. */
export function formatJunit(report: TestReport): string {
  const s = summarize(report);
  const properties = [
    `      <property name="manifests" value="${attr(report.manifests)}"/>`,
    ...(report.opa ? [`      <property name="opa" value="${attr(`${report.opa.version} ${report.opa.binary}`)}"/>`] : []),
    ...report.notes.map((n) => `      <property name="note" value="${attr(n)}"/>`),
  ];
  const suites = report.files.map((file) => {
    const own = report.results.filter((r) => r.case.file === file);
    const failures = own.filter((r) => r.failures.length > 0).length;
    return [
      `  <testsuite name="${attr(file)}" tests="${own.length}" failures="${failures}" errors="0" skipped="0">`,
      '    <properties>',
      ...properties,
      '    </properties>',
      ...own.map((r) => junitCase(r, report)),
      '  </testsuite>',
    ].join('\n');
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="acl-operator test" tests="${s.cases}" failures="${s.failed + s.disagreements}" errors="0" skipped="0" time="${s.seconds.toFixed(3)}">`,
    ...suites,
    '</testsuites>',
    '',
  ].join('\n');
}

/** A TAP description: one line, and `#` escaped (it would start a directive). */
function tapText(text: string): string {
  return text
    .replace(/[\r\n]+/g, ' ')
    .replaceAll('\\', '\\\\')
    .replaceAll('#', '\\#');
}

/** TAP version 13: a test point per case; a failing one carries a YAML block. */
export function formatTap(report: TestReport): string {
  const lines = ['TAP version 13', `# acl-operator test --manifests ${tapText(report.manifests)}`];
  if (report.opa) lines.push(`# OPA ${tapText(report.opa.version)} (${tapText(report.opa.binary)})`);
  lines.push(...report.notes.map((n) => `# ${tapText(n)}`), `1..${report.results.length}`);
  report.results.forEach((r, i) => {
    const title = `${i + 1} - ${tapText(`${locationOf(r)} ${r.case.name}`)}`;
    if (r.failures.length === 0) {
      lines.push(`ok ${title}`);
      return;
    }
    const block = stringify(
      {
        message: r.failures.map((f) => f.message).join('; '),
        severity: statusOf(r) === 'failed' ? 'fail' : 'disagreement',
        at: { file: r.case.file, line: r.case.line, column: r.case.column },
        tenant: r.case.tenant,
        request: JSON.stringify(r.case.input),
        expected: describeExpected(r),
        got: describeNative(r.native),
        ...(r.opa !== undefined ? { opa: describeOpa(r) } : {}),
        reasons: [...r.native.reasons],
      },
      { lineWidth: 0 },
    );
    lines.push(
      `not ok ${title}`,
      '  ---',
      ...block
        .trimEnd()
        .split('\n')
        .map((l) => `  ${l}`),
      '  ...',
    );
  });
  lines.push(`# ${tapText(summaryLine(report))}`);
  return `${lines.join('\n')}\n`;
}

/** The JSON report (schema "acl-operator-test/v1", docs/testing.md). */
export function formatJson(report: TestReport): string {
  const s = summarize(report);
  const caseJson = (r: CaseResult) => ({
    name: r.case.name,
    line: r.case.line,
    column: r.case.column,
    tenant: r.case.tenant,
    status: statusOf(r),
    input: r.case.input,
    expected: r.case.expect,
    native: r.native,
    opa: r.opa ?? null,
    failures: r.failures,
  });
  return `${JSON.stringify(
    {
      format: 'acl-operator-test/v1',
      manifests: report.manifests,
      opa: report.opa ?? null,
      notes: report.notes,
      summary: { ...s, notCheckedByOpa: s.notCheckedByOpa ?? null },
      files: report.files.map((file) => ({ file, cases: report.results.filter((r) => r.case.file === file).map(caseJson) })),
    },
    null,
    2,
  )}\n`;
}
