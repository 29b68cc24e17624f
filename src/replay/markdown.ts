// A replay report as a pull-request comment (GitHub-flavoured Markdown): a verdict line, a totals
// table, the flip groups in a table, their examples in <details>, the causes of lines not replayed.
// Every cell is escaped (pipes, line breaks, backticks, HTML, emphasis, links, mentions) and every
// code block fenced longer than any backtick run inside it, so no input can break a table or inject HTML.
import { CAUSES, type Counts, type ReplayReport } from './types.ts';
import { count, counted, direction, inputText, n, safe, targetName, unreplayableTotal, verdict } from './words.ts';

/** GitHub refuses a comment over 65,536 characters: the whole report stays within this many. */
const COMMENT_CHARS = 64_000;
/** Groups listed in the table, while its rows stay within FLIPS_TABLE_CHARS; the rest are summed in one line. */
const TABLE_GROUPS = 50;
const FLIPS_TABLE_CHARS = 24_000;
/** Tenants and bundles in the counts table (those with the most flips); the rest are summed in one row. */
const TABLE_TARGETS = 50;
/** Groups whose examples are shown, while their code blocks fit in what the rest of the comment leaves. */
const EXAMPLE_GROUPS = 10;
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

function flipsOf(c: Counts): number {
  return c.allowToDeny + c.denyToAllow;
}

/** The counts table: all, then the TABLE_TARGETS tenants and bundles with the most flips (in name order), the others summed. */
function totalsTable(r: ReplayReport): string[] {
  const ranked = [...r.targets.entries()].sort(([i, a], [j, b]) => flipsOf(b.counts) - flipsOf(a.counts) || i - j);
  const shown = new Set(ranked.slice(0, TABLE_TARGETS).map(([i]) => i));
  const rest = r.targets.filter((_, i) => !shown.has(i));
  const sum = (key: keyof Counts): number => rest.reduce((total, t) => total + t.counts[key], 0);
  const restCounts: Counts = {
    replayed: sum('replayed'),
    unchanged: sum('unchanged'),
    allowToDeny: sum('allowToDeny'),
    denyToAllow: sum('denyToAllow'),
  };
  return [
    row(['', 'Replayed', 'Unchanged', 'Allow → deny', 'Deny → allow']),
    row(['---', '---:', '---:', '---:', '---:']),
    row(['**All**', ...countCells(r.totals)]),
    ...r.targets.filter((_, i) => shown.has(i)).map((t) => row([cell(targetName(t.tenant, t.bundle)), ...countCells(t.counts)])),
    ...(rest.length === 0 ? [] : [row([`${n(rest.length)} more tenants and bundles (see the JSON report)`, ...countCells(restCounts)])]),
  ];
}

function flipRow(g: ReplayReport['groups'][number], r: ReplayReport): string {
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

/** The flip groups' table: at most TABLE_GROUPS rows within FLIPS_TABLE_CHARS, the flips of the rest in one line. */
function flipsTable(r: ReplayReport): string[] {
  if (r.groups.length === 0 && r.otherGroupFlips === 0) return [];
  const out = [
    '',
    '#### Flips',
    '',
    row(['Flips', 'Direction', 'Tenant', 'Bundle', 'Subject type', 'Action', 'Resource type', 'Rule before', 'Rule after']),
    row(['---:', '---', '---', '---', '---', '---', '---', '---', '---']),
  ];
  let budget = FLIPS_TABLE_CHARS;
  let shown = 0;
  for (const g of r.groups.slice(0, TABLE_GROUPS)) {
    const line = flipRow(g, r);
    budget -= line.length + 1;
    if (budget < 0) break;
    out.push(line);
    shown++;
  }
  const more = r.groups.slice(shown).reduce((sum, g) => sum + g.count, 0) + r.otherGroupFlips;
  if (more > 0) out.push('', `${n(more)} more flips in further groups: see the JSON report.`);
  return out;
}

/** The examples of the first EXAMPLE_GROUPS groups, folded, while their blocks fit in `budget` characters. */
function examplesSection(r: ReplayReport, budget: number): string[] {
  const out: string[] = [];
  let left = budget;
  for (const [i, g] of r.groups.slice(0, EXAMPLE_GROUPS).entries()) {
    const summary = `Examples of group ${i + 1}: ${n(g.count)} ${direction(g.change)}, ${cell(g.subjectType)} ${cell(g.action)} ${cell(g.resourceType)}`;
    const examples = g.examples.map(
      (e) => `// ${e.where}  ${e.time}\n${typeof e.input === 'string' ? e.input : JSON.stringify(e.input, null, 2)}`,
    );
    const block = ['', '<details>', `<summary>${summary}</summary>`, '', fenced('json', examples.join('\n\n')), '', '</details>'];
    const more = ['', `Examples of group ${i + 1} and after: see the JSON report (\`--format json\`).`];
    left -= block.join('\n').length + 1;
    // What is left always has room for the line saying the rest are elsewhere.
    if (left < more.join('\n').length + 1) {
      out.push(...more);
      break;
    }
    out.push(...block);
  }
  return out;
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

/** The report as a pull-request comment, within COMMENT_CHARS: the examples get what the rest leaves. */
export function formatMarkdown(r: ReplayReport): string {
  const mark = r.gate.passed ? '✅' : '❌';
  const notReplayed = unreplayableTotal(r);
  const head = [
    `### ${mark} Replay ${verdict(r)}`,
    '',
    `${count(r.lines, 'line')} of the decision log against ${cell(r.manifests)}: ${n(r.totals.replayed)} replayed, ${n(r.outsideWindow)} outside the window, ${n(notReplayed)} not replayable.`,
    '',
    ...totalsTable(r),
    ...flipsTable(r),
  ];
  const tail = [...unreplayableSection(r), ...opaSection(r), ''];
  const used = head.join('\n').length + tail.join('\n').length + 1;
  return [...head, ...examplesSection(r, COMMENT_CHARS - used), ...tail].join('\n');
}
