// A replay report as JUnit XML: one testsuite per tenant and bundle, a failing testcase per flip
// group (passing, with a note, when --allow-direction lets its direction through) and a passing one
// for the unchanged decisions; lines not replayed are skipped testcases of their own suite, OPA's
// disagreements a suite too. Everything from the log is escaped: it may be anything.
import { xmlAttr as attr, xmlText as xml } from '../policytest/index.ts';
import { CAUSES, type FlipGroup, type ReplayReport, type TargetCounts } from './types.ts';
import { count, counted, direction, inputText, n, rules, targetName, types, verdict } from './words.ts';

interface Case {
  readonly name: string;
  readonly failure?: { readonly message: string; readonly type: string; readonly body: string };
  readonly skipped?: string;
  readonly out?: string;
}

function testcase(c: Case, classname: string): string {
  const open = `    <testcase name="${attr(c.name)}" classname="${attr(classname)}">`;
  const parts: string[] = [];
  if (c.failure)
    parts.push(`      <failure message="${attr(c.failure.message)}" type="${attr(c.failure.type)}">${xml(c.failure.body)}</failure>`);
  if (c.skipped !== undefined) parts.push(`      <skipped message="${attr(c.skipped)}"/>`);
  if (c.out !== undefined) parts.push(`      <system-out>${xml(c.out)}</system-out>`);
  return parts.length === 0 ? `${open}</testcase>` : [open, ...parts, '    </testcase>'].join('\n');
}

interface Suite {
  readonly text: string;
  readonly tests: number;
  readonly failures: number;
  readonly skipped: number;
}

function suite(name: string, cases: readonly Case[]): Suite {
  const failures = cases.filter((c) => c.failure).length;
  const skipped = cases.filter((c) => c.skipped !== undefined).length;
  const text = [
    `  <testsuite name="${attr(name)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="${skipped}">`,
    ...cases.map((c) => testcase(c, name)),
    '  </testsuite>',
  ].join('\n');
  return { text, tests: cases.length, failures, skipped };
}

function groupCase(g: FlipGroup, r: ReplayReport): Case {
  const name = `${direction(g.change)}: ${types(g)} (${rules(g)})`;
  const examples = g.examples.map((e) => `${e.where}  ${e.time}\n${inputText(e.input)}`).join('\n\n');
  const message = `${count(g.count, 'decision')} would flip ${direction(g.change)}`;
  if (!counted(g, r)) return { name, out: `${message} (allowed by --allow-direction deny-to-allow)\n\n${examples}` };
  return { name, failure: { message, type: g.change, body: examples } };
}

function targetSuite(t: TargetCounts, r: ReplayReport): Suite {
  const own = r.groups.filter((g) => g.tenant === t.tenant && g.bundle === t.bundle);
  return suite(targetName(t.tenant, t.bundle), [
    { name: `unchanged: ${n(t.counts.unchanged)} of ${n(t.counts.replayed)} decisions` },
    ...own.map((g) => groupCase(g, r)),
  ]);
}

/** JUnit XML as CI systems read it. */
export function formatJunit(r: ReplayReport): string {
  const suites = r.targets.map((t) => targetSuite(t, r));
  if (r.otherGroupFlips > 0) {
    const message = `${n(r.otherGroupFlips)} more flips in groups beyond the ones listed (too many distinct groups)`;
    suites.push(suite('other groups', [{ name: 'flips not grouped', failure: { message, type: 'flips', body: message } }]));
  }
  const causes = CAUSES.filter((c) => r.unreplayable[c] > 0).map((c): Case => {
    const lines = r.unreplayableExamples.filter((u) => u.cause === c).map((u) => `${u.where}  ${u.detail}`);
    return {
      name: `${c}: ${count(r.unreplayable[c], 'line')}`,
      skipped: `${count(r.unreplayable[c], 'line')} not replayable (${c})`,
      out: lines.join('\n'),
    };
  });
  if (causes.length > 0) suites.push(suite('not replayable', causes));
  if (r.opa !== undefined) {
    const o = r.opa;
    const name = `OPA ${o.version}: ${n(o.decided)} decisions agree with the native replay`;
    const body = o.disagreementExamples
      .map((e) => `${e.where}  bundle ${e.bundle}: OPA ${e.opa}, native ${e.native}\n${inputText(e.input)}`)
      .join('\n\n');
    const message = `${count(o.disagreements, 'decision')} of OPA ${o.version} differ from the native replay`;
    suites.push(suite(`OPA ${o.version}`, [o.disagreements === 0 ? { name } : { name, failure: { message, type: 'disagreement', body } }]));
  }
  const sum = (pick: (s: Suite) => number): number => suites.reduce((total, s) => total + pick(s), 0);
  const [tests, failures, skipped] = [sum((s) => s.tests), sum((s) => s.failures), sum((s) => s.skipped)];
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="acl-operator replay: gate ${attr(verdict(r))}" tests="${tests}" failures="${failures}" errors="0" skipped="${skipped}">`,
    ...suites.map((s) => s.text),
    '</testsuites>',
    '',
  ].join('\n');
}
