// A replay report as a pull-request comment (GitHub-flavoured Markdown): a verdict line, a totals
// table, the flip groups in a table, their examples in <details>, the causes of lines not replayed.
// Every cell is escaped (pipes, line breaks, backticks, HTML, emphasis, links, mentions) and every
// code block fenced longer than any backtick run inside it, so no input can break a table or inject HTML.
import { CAUSES, type Counts, type ReplayReport } from './types.ts';
import { count, counted, direction, inputText, n, safe, targetName, unreplayableTotal, verdict } from './words.ts';

/** Groups listed in the table; the rest are summed in one line (a comment has a size limit). */
const TABLE_GROUPS = 50;
/** Groups whose examples are shown... */
const EXAMPLE_GROUPS = 10;
/** ...while their code blocks stay within this many characters (GitHub refuses a comment over 65,536). */
const EXAMPLES_BUDGET = 30_000;
/** A cell holds at most this many characters of escaped text from the log (a type may be 256 characters long). */
const CELL_CHARS = 120;

/** Characters with a meaning in Markdown or HTML: written as numeric character references, shown literally. */
const MARKUP = /[&<>"'`|\\*_~[\]()!#@:]/g;

/**
 * Text as one table cell (or a line of prose): controls as \u escapes, every markup character a
 * character reference, cut (with …) where the escaped text would pass `max` characters.
 */
function cell(text: string, max = CELL_CHARS): string {
  let out = '';
  for (const ch of text.replace(/[\u2028\u2029]/gu, ' ')) {
    const piece = safe(ch).replace(MARKUP, (c) => `&#${c.charCodeAt(0)};`);
    if (out.length + piece.length > max) return `${out}…`;
    out += piece;
  }
  return out;
}

/** A fenced code block that no backtick run inside it can close. */
function fenced(info: string, text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const lines = text.split(/\r\n?|\n|[\u2028\u2029]/).map(safe);
  return `${fence}${info}\n${lines.join('\n')}\n${fence}`;
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

function countCells(c: Counts): string[] {
  return [n(c.replayed), n(c.unchanged), n(c.allowToDeny), n(c.denyToAllow)];
}

function totalsTable(r: ReplayReport): string[] {
  return [
    row(['', 'Replayed', 'Unchanged', 'Allow → deny', 'Deny → allow']),
    row(['---', '---:', '---:', '---:', '---:']),
    row(['**All**', ...countCells(r.totals)]),
    ...r.targets.map((t) => row([cell(targetName(t.tenant, t.bundle)), ...countCells(t.counts)])),
  ];
}

function flipsSection(r: ReplayReport): string[] {
  if (r.groups.length === 0 && r.otherGroupFlips === 0) return [];
  const shown = r.groups.slice(0, TABLE_GROUPS);
  const out = [
    '#### Flips',
    '',
    row(['Flips', 'Direction', 'Tenant', 'Bundle', 'Subject type', 'Action', 'Resource type', 'Rule before', 'Rule after']),
    row(['---:', '---', '---', '---', '---', '---', '---', '---', '---']),
    ...shown.map((g) =>
      row([
        n(g.count),
        `${direction(g.change)}${counted(g, r) ? '' : ' (allowed)'}`,
        cell(g.tenant),
        g.bundle === null ? '(service)' : cell(g.bundle),
        cell(g.subjectType),
        cell(g.action),
        cell(g.resourceType),
        g.ruleBefore === null ? '—' : cell(g.ruleBefore),
        g.ruleAfter === null ? '—' : cell(g.ruleAfter),
      ]),
    ),
  ];
  const hidden = r.groups.slice(TABLE_GROUPS);
  const more = hidden.reduce((sum, g) => sum + g.count, 0) + r.otherGroupFlips;
  if (more > 0) out.push('', `${n(more)} more flips in further groups: see the JSON report.`);
  let budget = EXAMPLES_BUDGET;
  for (const [i, g] of r.groups.slice(0, EXAMPLE_GROUPS).entries()) {
    const summary = `Examples of group ${i + 1}: ${n(g.count)} ${direction(g.change)}, ${cell(g.subjectType)} ${cell(g.action)} ${cell(g.resourceType)}`;
    const examples = g.examples.map(
      (e) => `// ${e.where}  ${e.time}\n${typeof e.input === 'string' ? e.input : JSON.stringify(e.input, null, 2)}`,
    );
    const block = fenced('json', examples.join('\n\n'));
    budget -= block.length;
    if (budget < 0) {
      out.push('', `Examples of group ${i + 1} and after: see the JSON report (\`--format json\`).`);
      break;
    }
    out.push('', '<details>', `<summary>${summary}</summary>`, '', block, '', '</details>');
  }
  return ['', ...out];
}

function unreplayableSection(r: ReplayReport): string[] {
  const causes = CAUSES.filter((c) => r.unreplayable[c] > 0);
  if (causes.length === 0) return [];
  return [
    '',
    '#### Not replayable',
    '',
    row(['Cause', 'Lines', 'First lines']),
    row(['---', '---:', '---']),
    ...causes.map((c) => {
      const first = r.unreplayableExamples.filter((u) => u.cause === c).map((u) => `${cell(u.where)}: ${cell(u.detail, 300)}`);
      return row([c, n(r.unreplayable[c]), first.join('<br>')]);
    }),
  ];
}

function opaSection(r: ReplayReport): string[] {
  const o = r.opa;
  if (o === undefined) return [];
  const out = [
    '',
    `OPA ${cell(o.version)} decided ${n(o.decided)} times on the candidate's bundles: ${count(o.disagreements, 'disagreement')} with the native replay.`,
  ];
  if (o.disagreementExamples.length > 0) {
    const text = o.disagreementExamples.map(
      (e) => `// ${e.where}  bundle ${e.bundle}: OPA ${e.opa}, native ${e.native}\n${inputText(e.input)}`,
    );
    out.push('', '<details>', '<summary>Disagreements</summary>', '', fenced('json', text.join('\n\n')), '', '</details>');
  }
  return out;
}

/** The report as a pull-request comment. */
export function formatMarkdown(r: ReplayReport): string {
  const mark = r.gate.passed ? '✅' : '❌';
  const notReplayed = unreplayableTotal(r);
  return [
    `### ${mark} Replay ${verdict(r)}`,
    '',
    `${count(r.lines, 'line')} of the decision log against ${cell(r.manifests)}: ${n(r.totals.replayed)} replayed, ${n(r.outsideWindow)} outside the window, ${n(notReplayed)} not replayable.`,
    '',
    ...totalsTable(r),
    ...flipsSection(r),
    ...unreplayableSection(r),
    ...opaSection(r),
    '',
  ].join('\n');
}
