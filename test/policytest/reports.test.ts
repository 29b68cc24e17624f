// The four reports of one run holding a pass, a failure and a disagreement with OPA: what a person
// reads (text), and what CI systems parse (JUnit XML, well-formed and escaped; TAP 13; JSON).
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { formatJson, formatJunit, formatTap } from '../../src/policytest/formats.ts';
import { formatText, passed, type TestReport } from '../../src/policytest/report.ts';
import { withOpaDecisions } from '../../src/policytest/run.ts';
import { offlineOf, ROOT, runText } from './support.ts';

const FILE = 'team <&> "docs".test.yaml';
const TEXT = `tenant: acme
cases:
  - {name: "a member reads <her> team's doc & more", subject: {type: user, id: u, properties: {team: blue}}, action: read, resource: {type: document, id: d, properties: {team: blue}}, expect: allow}
  - {name: "expects allow # wrongly \\u0001", subject: {type: user, id: u, properties: {team: red}}, action: read, resource: {type: document, id: d, properties: {team: blue}}, expect: allow, rule: team-documents}
  - {name: OPA would say otherwise, subject: {type: user, id: u2, properties: {team: red}}, action: write, resource: {type: document, id: d2, properties: {team: red}}, expect: allow}
`;

let report: TestReport;
beforeAll(async () => {
  const outcome = await runText(await offlineOf(join(ROOT, 'examples')), TEXT, FILE);
  if (!outcome.ok) throw new Error(JSON.stringify(outcome));
  // An OPA that denies the third case on one of the two bundles that admit it.
  const opa = { binary: '/opt/opa', version: '9.9.9' };
  const decisions = outcome.report.results.map((r, i) =>
    ['acme/gateway-all-v1', 'acme/gateway-documents'].map((bundle) => ({
      bundle,
      decision: i === 2 && bundle === 'acme/gateway-documents' ? ('deny' as const) : r.native.decision,
    })),
  );
  report = {
    ...outcome.report,
    results: withOpaDecisions(outcome.report.results, decisions, opa.version),
    opa,
    notes: ['lint: Rule acme/x has no state <warning>'],
    seconds: 0.5,
  };
});

/**
 * Checks that `text` is well-formed XML as far as a report can go wrong: balanced tags, quoted
 * attributes, no raw `<` or `&` in text or attributes, only characters XML 1.0 allows.
 */
function wellFormedXml(text: string): string[] {
  const problems: string[] = [];
  if (/[^\t\n\r\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u.test(text)) problems.push('a character XML 1.0 does not allow');
  const body = text.replace(/^<\?xml[^?]*\?>\n/, '');
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/gy;
  for (let m = token.exec(body); m !== null; m = token.exec(body)) {
    const [, close, name, attrs, selfClose, chars, stray] = m;
    if (stray !== undefined) problems.push(`a stray < at ${m.index}`);
    const values = chars ?? (attrs ?? '').replace(/[A-Za-z_][\w.-]*="([^"]*)"/g, '$1');
    if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(values)) problems.push(`an unescaped & near ${m.index}`);
    if (name === undefined) continue;
    if (close) {
      if (stack.pop() !== name) problems.push(`</${name}> closes nothing open`);
    } else if (!selfClose) stack.push(name);
  }
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(', ')}`);
  return problems;
}

describe('reports', () => {
  it('count a disagreement apart from a failure, and neither passes', () => {
    expect(report.results.map((r) => r.failures.map((f) => f.kind))).toEqual([[], ['expectation'], ['disagreement']]);
    expect(passed(report)).toBe(false);
  });

  it('text: the notes, each failing case with its request, expectation, decisions and explanation, then the summary', () => {
    const text = formatText(report);
    expect(text).toContain(
      'acl-operator test --manifests examples: 1 test file, 3 cases; OPA 9.9.9 (/opt/opa) on the bundles\nlint: Rule acme/x has no state <warning>\n',
    );
    expect(text).toContain(`FAIL  ${FILE}:4  expects allow # wrongly \u0001
  tenant:     acme
  request:    {"principal":{"team":"red","type":"user","id":"u"},"action":"read","resource":{"team":"blue","type":"document","id":"d"},"context":{},"actionProperties":{}}
  expected:   allow by rule team-documents
  got:        deny
  OPA 9.9.9:  deny on bundle acme/gateway-all-v1, deny on bundle acme/gateway-documents
  why:        Rule acme/admins-manage-documents did not match: its condition "admin" in principal.roles could not be evaluated (principal.roles is missing)
              Rule acme/team-documents did not match: its condition principal.team == resource.team is false
  failed:     expected allow, got deny (rule team-documents does not match)
`);
    expect(text).toContain(`DISAGREE  ${FILE}:5  OPA would say otherwise`);
    expect(text).toContain(
      '  disagrees:  OPA 9.9.9 decides deny on bundle acme/gateway-documents; the native evaluator allow (rule team-documents)\n',
    );
    expect(text).not.toContain('a member reads');
    expect(text).toContain(
      `${FILE}: 3 cases, 2 not passed\n3 cases: 1 passed, 1 failed, 1 disagreement with OPA, 0 not checked by OPA (6 cases/s)\n`,
    );
  });

  it('JUnit: well-formed XML, one testsuite per file and one testcase per case, failures with message, type and body', () => {
    const xml = formatJunit(report);
    expect(wellFormedXml(xml)).toEqual([]);
    expect(xml).toContain('<testsuites name="acl-operator test" tests="3" failures="2" errors="0" skipped="0" time="0.500">');
    expect(xml).toContain('<testsuite name="team &lt;&amp;&gt; &quot;docs&quot;.test.yaml" tests="3" failures="2" errors="0" skipped="0">');
    expect(xml).toContain('<property name="note" value="lint: Rule acme/x has no state &lt;warning&gt;"/>');
    expect(xml).toContain('<testcase name="a member reads &lt;her&gt; team&apos;s doc &amp; more"');
    expect(xml).toContain('<testcase name="expects allow # wrongly \ufffd"');
    expect(xml).toContain('<failure message="expected allow, got deny (rule team-documents does not match)" type="expectation">');
    expect(xml).toContain('type="disagreement">');
    expect(xml.match(/<testcase /g)).toHaveLength(3);
    expect(xml.match(/<failure /g)).toHaveLength(2);
    // The checker itself fails on what it must catch.
    expect(wellFormedXml('<a><b></a>')).not.toEqual([]);
    expect(wellFormedXml('<a x="1 & 2"/>')).not.toEqual([]);
    expect(wellFormedXml('<a>\u0001</a>')).not.toEqual([]);
  });

  it('TAP 13: a plan, a test point per case, a YAML block per failing one, # escaped in descriptions', () => {
    const tap = formatTap(report);
    const lines = tap.split('\n');
    expect(lines.slice(0, 5)).toEqual([
      'TAP version 13',
      '# acl-operator test --manifests examples',
      '# OPA 9.9.9 (/opt/opa)',
      '# lint: Rule acme/x has no state <warning>',
      '1..3',
    ]);
    expect(lines.filter((l) => /^(not )?ok \d+ - /.test(l))).toEqual([
      `ok 1 - ${FILE}:3 a member reads <her> team's doc & more`,
      `not ok 2 - ${FILE}:4 expects allow \\# wrongly \u0001`,
      `not ok 3 - ${FILE}:5 OPA would say otherwise`,
    ]);
    const blocks = [...tap.matchAll(/\n {2}---\n([\s\S]*?)\n {2}\.\.\.\n/g)].map(
      (m) => parse((m[1] ?? '').replace(/^ {2}/gm, '')) as Record<string, unknown>,
    );
    expect(blocks).toHaveLength(2);
    expect(blocks[0]).toMatchObject({
      severity: 'fail',
      at: { file: FILE, line: 4, column: 5 },
      expected: 'allow by rule team-documents',
      got: 'deny',
    });
    expect(blocks[1]).toMatchObject({
      severity: 'disagreement',
      opa: 'allow on bundle acme/gateway-all-v1, deny on bundle acme/gateway-documents',
    });
    expect(lines.at(-2)).toBe('# 3 cases: 1 passed, 1 failed, 1 disagreement with OPA, 0 not checked by OPA (6 cases/s)');
  });

  it('JSON: the documented schema', () => {
    const Decision = z.enum(['allow', 'deny']);
    const Schema = z.strictObject({
      format: z.literal('acl-operator-test/v1'),
      manifests: z.string(),
      opa: z.strictObject({ binary: z.string(), version: z.string() }).nullable(),
      notes: z.array(z.string()),
      summary: z.strictObject({
        files: z.number(),
        cases: z.number(),
        passed: z.number(),
        failed: z.number(),
        disagreements: z.number(),
        notCheckedByOpa: z.number().nullable(),
        seconds: z.number(),
        casesPerSecond: z.number(),
      }),
      files: z.array(
        z.strictObject({
          file: z.string(),
          cases: z.array(
            z.strictObject({
              name: z.string(),
              line: z.number(),
              column: z.number(),
              tenant: z.string(),
              status: z.enum(['passed', 'failed', 'disagreement']),
              input: z.strictObject({
                principal: z.record(z.string(), z.unknown()),
                action: z.string(),
                resource: z.record(z.string(), z.unknown()),
                context: z.record(z.string(), z.unknown()),
                actionProperties: z.record(z.string(), z.unknown()),
              }),
              expected: z.strictObject({ decision: Decision, rule: z.string().optional(), reason: z.string().optional() }),
              native: z.strictObject({ decision: Decision, rule: z.string().optional(), reasons: z.array(z.string()) }),
              opa: z.array(z.strictObject({ bundle: z.string(), decision: Decision })).nullable(),
              failures: z.array(z.strictObject({ kind: z.enum(['expectation', 'disagreement']), message: z.string() })),
            }),
          ),
        }),
      ),
    });
    const json = Schema.parse(JSON.parse(formatJson(report)));
    expect(json.summary).toMatchObject({ files: 1, cases: 3, passed: 1, failed: 1, disagreements: 1, notCheckedByOpa: 0 });
    expect(json.files[0]?.cases.map((c) => c.status)).toEqual(['passed', 'failed', 'disagreement']);
  });
});
