// Reads `acl-operator replay`'s JUnit and Markdown the way their readers do (fast-xml-parser as a CI
// system's parser, marked's GFM lexer as a pull-request page), back into numbers the test compares
// with the JSON report of the same replay.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { marked, type Tokens } from 'marked';

export interface JunitSuite {
  readonly name: string;
  readonly tests: number;
  readonly failures: number;
  readonly skipped: number;
  readonly cases: readonly { readonly name: string; readonly failure?: string; readonly skipped?: string }[];
}

export interface Junit {
  readonly tests: number;
  readonly failures: number;
  readonly skipped: number;
  readonly suites: readonly JunitSuite[];
}

type Attrs = Record<string, string | undefined>;
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The JUnit XML's suites and cases; throws when the XML does not validate. */
export function readJunit(xml: string): Junit {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new Error(`JUnit does not validate: ${JSON.stringify(valid.err)}`);
  const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', parseAttributeValue: false }).parse(xml) as {
    testsuites: Attrs & { testsuite?: (Attrs & { testcase?: unknown })[] | (Attrs & { testcase?: unknown }) };
  };
  const root = doc.testsuites;
  return {
    tests: Number(root.tests),
    failures: Number(root.failures),
    skipped: Number(root.skipped),
    suites: list(root.testsuite).map((s) => ({
      name: String(s.name),
      tests: Number(s.tests),
      failures: Number(s.failures),
      skipped: Number(s.skipped),
      cases: list(s.testcase as (Attrs & { failure?: Attrs; skipped?: Attrs })[] | undefined).map((c) => ({
        name: String(c.name),
        ...(c.failure === undefined ? {} : { failure: String(c.failure.message) }),
        ...(c.skipped === undefined ? {} : { skipped: String(c.skipped.message) }),
      })),
    })),
  };
}

/** A table of the Markdown: its header and rows as the text a reader sees (character references decoded). */
export interface Table {
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

const decode = (s: string): string => s.replace(/&#(\d+);/g, (_, d: string) => String.fromCharCode(Number(d))).replace(/\*\*/g, '');

/** Every table marked's lexer finds in the Markdown. */
export function markdownTables(md: string): Table[] {
  return marked
    .lexer(md)
    .filter((t): t is Tokens.Table => t.type === 'table')
    .map((t) => ({ header: t.header.map((h) => decode(h.text)), rows: t.rows.map((r) => r.map((c) => decode(c.text))) }));
}

/** "1,234" → 1234. */
export const num = (s: string | undefined): number => Number((s ?? '').replaceAll(',', ''));
