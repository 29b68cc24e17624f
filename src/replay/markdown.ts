// A replay report as a pull-request comment (GitHub-flavoured Markdown): a verdict line, a totals
// table, the flip groups in a table, their examples in <details>, the causes of lines not replayed.
// Every cell is escaped (pipes, line breaks, backticks, HTML, emphasis, links, mentions) and every
// code block fenced longer than any backtick run inside it, so no input can break a table or inject HTML.
import { CAUSES, type Counts, type FlipGroup, type ReplayReport } from './types.ts';
import { count, counted, direction, inputText, n, safe, targetName, unreplayableTotal, verdict } from './words.ts';

/** GitHub refuses a comment over 65,536 characters: the report stays within this, whatever the log holds. */
const COMMENT_CHARS = 60_000;
/** Tenants and bundles listed in the totals table (past this many, those with flips first); the rest are summed in one row. */
const TABLE_TARGETS = 30;
/** Groups listed in the table (while the comment has room); the rest are summed in one line. */
const TABLE_GROUPS = 50;
/** Groups whose examples are shown... */
const EXAMPLE_GROUPS = 10;
/** ...while their code blocks stay within this many characters (and the comment within COMMENT_CHARS). */
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

/** The characters `lines` take once joined with line breaks (one more each, for its break). */
function sizeOf(lines: readonly string[]): number {
  return lines.reduce((sum, l) => sum + l.length + 1, 0);
}

const flipsOf = (c: Counts): number => c.allowToDeny + c.denyToAllow;

function totalsTable(r: ReplayReport): string[] {
  // All in the report's order; a fleet of tenants and bundles would not fit: those with flips first (most first), the rest summed.
  const ordered = r.targets.length <= TABLE_TARGETS ? r.targets : [...r.targets].sort((a, b) => flipsOf(b.counts) - flipsOf(a.counts));
  const rest = ordered.slice(TABLE_TARGETS);
  const sum = (f: keyof Counts): number => rest.reduce((total, t) => total + t.counts[f], 0);
  return [
    row(['', 'Replayed', 'Unchanged', 'Allow → deny', 'Deny → allow']),
    row(['---', '---:', '---:', '---:', '---:']),
    row(['**All**', ...countCells(r.totals)]),
    ...ordered.slice(0, TABLE_TARGETS).map((t) => row([cell(targetName(t.tenant, t.bundle)), ...countCells(t.counts)])),
    ...(rest.length === 0
      ? []
      : [
          row([
            `${n(rest.length)} more tenants and bundles (see the JSON report)`,
            ...countCells({
              replayed: sum('replayed'),
              unchanged: sum('unchanged'),
              allowToDeny: sum('allowToDeny'),
              denyToAllow: sum('denyToAllow'),
            }),
          ]),
        ]),
  ];
}

function groupRow(r: ReplayReport, g: FlipGroup): string {
  return row([
    n(g.count),
    `${direction(g.change)}${counted(g, r) ? '' : ' (allowed)'}`,
    cell(g.tenant),
    g.bundle === null ? '(service)' : cell(g.bundle),
    cell(g.subjectType),
    cell(g.action),
    cell(g.resourceType),
    g.ruleBefore === null ? '—' : cell(g.ruleBefore),
    g.ruleAfter === null ? '—' : cell(g.ruleAfter),
  ]);
}

/** The examples of the first groups shown, in <details>, within `budget` characters. */
function examplesOf(r: ReplayReport, shown: number, budget: number): string[] {
  const out: string[] = [];
  let left = Math.min(EXAMPLES_BUDGET, budget);
  for (const [i, g] of r.groups.slice(0, Math.min(EXAMPLE_GROUPS, shown)).entries()) {
    const summary = `Examples of group ${i + 1}: ${n(g.count)} ${direction(g.change)}, ${cell(g.subjectType)} ${cell(g.action)} ${cell(g.resourceType)}`;
    const examples = g.examples.map(
      (e) => `// ${e.where}  ${e.time}\n${typeof e.input === 'string' ? e.input : JSON.stringify(e.input, null, 2)}`,
    );
    const details = ['', '<details>', `<summary>${summary}</summary>`, '', fenced('json', examples.join('\n\n')), '', '</details>'];
    left -= sizeOf(details);
    if (left < 0) {
      out.push('', `Examples of group ${i + 1} and after: see the JSON report (\`--format json\`).`);
      break;
    }
    out.push(...details);
  }
  return out;
}

/** The flips table and examples, within `budget` characters: groups past it are summed in one line. */
function flipsSection(r: ReplayReport, budget: number): string[] {
  if (r.groups.length === 0 && r.otherGroupFlips === 0) return [];
  const out = [
    '',
    '#### Flips',
    '',
    row(['Flips', 'Direction', 'Tenant', 'Bundle', 'Subject type', 'Action', 'Resource type', 'Rule before', 'Rule after']),
    row(['---:', '---', '---', '---', '---', '---', '---', '---', '---']),
  ];
  // Room kept for the two notes (more flips, examples elsewhere).
  let used = sizeOf(out) + 200;
  let shown = 0;
  for (const g of r.groups.slice(0, TABLE_GROUPS)) {
    const line = groupRow(r, g);
    if (used + line.length + 1 > budget) break;
    out.push(line);
    used += line.length + 1;
    shown++;
  }
  const more = r.groups.slice(shown).reduce((sum, g) => sum + g.count, 0) + r.otherGroupFlips;
  if (more > 0) out.push('', `${n(more)} more flips in further groups: see the JSON report.`);
  return [...out, ...examplesOf(r, shown, budget - used)];
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

/** The report as a pull-request comment, within COMMENT_CHARS whatever the log holds. */
export function formatMarkdown(r: ReplayReport): string {
  const mark = r.gate.passed ? '✅' : '❌';
  const notReplayed = unreplayableTotal(r);
  const head = [
    `### ${mark} Replay ${verdict(r)}`,
    '',
    `${count(r.lines, 'line')} of the decision log against ${cell(r.manifests)}: ${n(r.totals.replayed)} replayed, ${n(r.outsideWindow)} outside the window, ${n(notReplayed)} not replayable.`,
    '',
    ...totalsTable(r),
  ];
  const tail = [...unreplayableSection(r), ...opaSection(r), ''];
  return [...head, ...flipsSection(r, COMMENT_CHARS - sizeOf(head) - sizeOf(tail)), ...tail].join('\n');
}
