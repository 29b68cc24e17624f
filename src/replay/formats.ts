// A replay report printed: text for a person at a terminal, JSON (the ReplayReport as it is, for
// scripts), JUnit (junit.ts) and Markdown for a pull-request comment (markdown.ts); summaryLine is the
// one line on stderr when the report went to --out.
import { formatJunit } from './junit.ts';
import { formatMarkdown } from './markdown.ts';
import type { ReplayReport } from './types.ts';
import { count, counted, direction, inputText, n, rules, safe, targetName, types, unreplayableTotal, verdict } from './words.ts';

function countsLine(c: ReplayReport['totals']): string {
  return `${n(c.replayed)} replayed: ${n(c.unchanged)} unchanged, ${n(c.allowToDeny)} allow → deny, ${n(c.denyToAllow)} deny → allow`;
}

function formatText(r: ReplayReport): string {
  const out: string[] = [];
  out.push(`replay of ${safe(r.manifests)} on ${r.sources.map(safe).join(', ') || '(no input)'}`);
  if (r.since !== undefined || r.until !== undefined) out.push(`window: ${r.since ?? 'the start'} to ${r.until ?? 'the end'}`);
  out.push(
    `${n(r.lines)} lines: ${countsLine(r.totals)}; ${n(r.outsideWindow)} outside the window, ${n(unreplayableTotal(r))} not replayable`,
  );
  if (r.targets.length > 0) {
    out.push('', 'per tenant and bundle:');
    for (const t of r.targets) out.push(`  ${safe(targetName(t.tenant, t.bundle))}: ${countsLine(t.counts)}`);
  }
  if (r.groups.length > 0) {
    out.push('', 'flips:');
    for (const g of r.groups) {
      const note = counted(g, r) ? '' : ' (allowed)';
      out.push(
        `  ${n(g.count)} ${direction(g.change)}${note}  ${safe(targetName(g.tenant, g.bundle))}  ${safe(types(g))}  ${safe(rules(g))}`,
      );
      for (const e of g.examples) out.push(`      ${safe(e.where)}  ${safe(e.time)}  ${safe(inputText(e.input))}`);
    }
  }
  if (r.otherGroupFlips > 0) out.push(`  ${n(r.otherGroupFlips)} more flips in further groups (not grouped: too many distinct groups)`);
  const causes = Object.entries(r.unreplayable).filter(([, count]) => count > 0);
  if (causes.length > 0) {
    out.push('', 'not replayable:');
    for (const [cause, count] of causes) {
      out.push(`  ${cause}: ${n(count)}`);
      for (const u of r.unreplayableExamples.filter((x) => x.cause === cause)) out.push(`      ${safe(u.where)}  ${safe(u.detail)}`);
    }
  }
  if (r.opa !== undefined) {
    const o = r.opa;
    out.push(
      '',
      `OPA ${o.version}: ${n(o.decided)} decisions, ${countsLine(o.counts).replace(/^[\d,]+ replayed: /, '')}; ${count(o.disagreements, 'disagreement')} with the native replay`,
    );
    for (const e of o.disagreementExamples) {
      out.push(`      ${safe(e.where)}  bundle ${safe(e.bundle)}: OPA ${e.opa}, native ${e.native}  ${safe(inputText(e.input))}`);
    }
  }
  out.push('', `gate ${verdict(r)}`, '');
  return out.join('\n');
}

/** One line for stderr when the report went to a file. */
export function summaryLine(r: ReplayReport): string {
  const opa = r.opa === undefined ? '' : `; OPA ${r.opa.version}: ${count(r.opa.disagreements, 'disagreement')}`;
  return `replay: ${n(r.lines)} lines, ${countsLine(r.totals)}, ${n(unreplayableTotal(r))} not replayable${opa}; gate ${verdict(r)}`;
}

/** Every format of `--format`, each the whole output. */
export const FORMATS: Record<'text' | 'json' | 'junit' | 'markdown', (r: ReplayReport) => string> = {
  text: formatText,
  json: (r) => `${JSON.stringify(r, null, 2)}\n`,
  junit: formatJunit,
  markdown: formatMarkdown,
};
