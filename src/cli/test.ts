// `acl-operator test`: decides the cases of test files (*.test.yaml) against what `serve` would serve
// for a folder of manifests (the offline pipeline), natively and, with --opa, in a real OPA on the
// bundles; prints the report in the format asked. Exit 0 when every case passes, 1 on a failure or a
// disagreement, 2 on bad usage, manifests with problems, test files with errors, or an unusable OPA.
import { deliverReport } from './deliver.ts';
import { readFile, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { commandDefaults } from '../config.ts';
import { openOpa, type Opa } from '../opa/index.ts';
import {
  formatJson,
  formatJunit,
  formatTap,
  formatText,
  passed,
  runSuite,
  summaryLine,
  type FileError,
  type TestReport,
  type TestText,
} from '../policytest/index.ts';
import type { Offline } from '../pipeline/index.ts';
import { buildFolder, folderRefusal } from './offline.ts';
import { walkManifests } from '../standalone/index.ts';
import { type Finding, formatFinding } from '../lint/index.ts';
import { countFindings } from './findings.ts';
import { renderOffline } from './render.ts';

const FORMATS = { text: formatText, junit: formatJunit, tap: formatTap, json: formatJson } as const;
type Format = keyof typeof FORMATS;
const isFormat = (f: string): f is Format => Object.hasOwn(FORMATS, f);

/** At most this many file errors are printed; the rest are counted. */
const MAX_ERRORS = 50;

interface Options {
  readonly manifests: string;
  readonly tests: string | undefined;
  readonly opa: string | undefined;
  readonly format: Format;
  readonly out: string | undefined;
}

class UsageError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

function optionsOf(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' | UsageError {
  const { values } = parseArgs({
    args: argv,
    options: {
      manifests: { type: 'string' },
      tests: { type: 'string' },
      opa: { type: 'string' },
      format: { type: 'string', default: 'text' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const manifests = values.manifests ?? commandDefaults(env).manifests;
  if (!manifests) return new UsageError('test needs --manifests <dir> (or ACL_MANIFESTS)');
  if (!isFormat(values.format)) return new UsageError(`--format ${values.format}: use text, junit, tap or json`);
  if (values.opa === '') return new UsageError('--opa needs the path of an opa binary');
  const opa = values.opa ?? (env['OPA_BIN'] || undefined);
  return { manifests, tests: values.tests, opa, format: values.format, out: values.out };
}

/** The test files to run: --tests (a file, or a folder searched like the manifests), else those beside the manifests. */
async function testFiles(options: Options): Promise<string[] | string> {
  const where = options.tests ?? options.manifests;
  try {
    if (options.tests !== undefined && (await stat(options.tests)).isFile()) return [options.tests];
    const { tests } = await walkManifests(where);
    return tests.length > 0 ? tests : `no test files (*.test.yaml, *.test.yml) under ${where}`;
  } catch (err) {
    return `cannot read test files from ${where}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function printErrors(errors: readonly FileError[]): void {
  const shown = errors.slice(0, MAX_ERRORS).map((e) => `${e.file}:${e.line}:${e.column}: ${e.message}`);
  if (errors.length > MAX_ERRORS) shown.push(`... and ${errors.length - MAX_ERRORS} more`);
  process.stderr.write(`${shown.join('\n')}\n${errors.length} error(s) in the test files: no case was decided\n`);
}

/** Writes the report to --out (a line on stderr says where and how it went) or to stdout; 2 when --out fails. */
function deliver(report: TestReport, options: Options): Promise<number> {
  return deliverReport(FORMATS[options.format](report), options.out, () => summaryLine(report));
}

/** Everything before deciding: usage, the test files, OPA and the manifests; a number is the exit status. */
async function prepare(options: Options): Promise<number | { texts: TestText[]; opa: Opa | undefined; offline: Offline; notes: string[] }> {
  const fail = (message: string): number => {
    process.stderr.write(`${message}\n`);
    return 2;
  };
  // First: the test files are looked for under the manifests folder.
  const refused = await folderRefusal(options.manifests);
  if (refused !== undefined) return fail(refused);
  const files = await testFiles(options);
  if (typeof files === 'string') return fail(files);
  const texts: TestText[] = [];
  for (const file of files) {
    try {
      texts.push({ file, text: await readFile(file, 'utf8') });
    } catch (err) {
      return fail(`cannot read the test file ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const opa = options.opa === undefined ? undefined : await openOpa(options.opa);
  if (typeof opa === 'string') return fail(opa);
  const offline = await buildFolder(options.manifests);
  if ('refused' in offline) return fail(offline.refused);
  const { problems, findings } = renderOffline(offline);
  if (problems.length > 0) {
    return fail(
      `${problems.length} problem(s) in the manifests of ${options.manifests}; no case was decided:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
  return { texts, opa, offline, notes: findingNotes(findings) };
}

/** The lint findings, shown in the report's header: legal, so no case fails for them, but worth a look. */
function findingNotes(findings: readonly Finding[]): string[] {
  if (findings.length === 0) return [];
  return [
    `${countFindings(findings.length)} (acl-operator lint --manifests <dir> for details):`,
    ...findings.map((f) => `  - ${formatFinding(f)}`),
  ];
}

/** `acl-operator test`; `usage` is printed for --help. */
export async function testCommand(argv: string[], usage: string): Promise<number> {
  const options = optionsOf(argv, process.env);
  if (options === 'help') {
    process.stdout.write(usage);
    return 0;
  }
  if (options instanceof UsageError) {
    process.stderr.write(`${options.message}\n\n${usage}`);
    return 2;
  }
  const ready = await prepare(options);
  if (typeof ready === 'number') return ready;
  const outcome = await runSuite(ready.offline, ready.texts, { manifests: options.manifests, opa: ready.opa, notes: ready.notes });
  if (!outcome.ok) {
    if ('errors' in outcome) printErrors(outcome.errors);
    else process.stderr.write(`${outcome.opaFailure}\n`);
    return 2;
  }
  const delivered = await deliver(outcome.report, options);
  if (delivered !== 0) return delivered;
  return passed(outcome.report) ? 0 : 1;
}
