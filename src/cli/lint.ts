// `acl-operator lint`: the findings of src/lint for a folder of manifests, built by the offline
// pipeline (as render builds it), as lines a person reads or JSON a pipeline reads.
import { parseArgs } from 'node:util';
import { commandDefaults } from '../config.ts';
import { type Finding, formatFinding } from '../lint/index.ts';
import { startOffline } from './offline.ts';
import { countFindings } from './findings.ts';
import { renderOffline } from './render.ts';

interface LintOptions {
  readonly dir: string | undefined;
  readonly strict: boolean;
  readonly format: string;
}

function readOptions(argv: string[]): LintOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      manifests: { type: 'string' },
      strict: { type: 'boolean', default: false },
      format: { type: 'string', default: 'text' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  return { dir: values.manifests ?? commandDefaults(process.env).manifests, strict: values.strict, format: values.format };
}

function formatText(findings: readonly Finding[], problems: readonly string[], files: number, dir: string): string {
  const lines = findings.map(formatFinding);
  if (problems.length > 0) lines.push(`${problems.length} problem(s):`, ...problems.map((p) => `  - ${p}`));
  lines.push(`${countFindings(findings.length)} in ${files} file(s) of ${dir}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Runs `acl-operator lint` (argv after the command): 0 when the manifests are valid (1 with
 * --strict when there are findings), 2 on bad usage or invalid manifests.
 */
export async function lint(argv: string[], usage: string): Promise<number> {
  const options = readOptions(argv);
  if (options === 'help') {
    process.stdout.write(usage);
    return 0;
  }
  const { format } = options;
  if (format !== 'text' && format !== 'json') {
    process.stderr.write(`--format must be text or json, not ${JSON.stringify(format)}\n\n${usage}`);
    return 2;
  }
  const built = await startOffline('lint', options.dir, usage);
  if (typeof built === 'number') return built;
  const { problems, findings } = renderOffline(built);
  process.stdout.write(
    format === 'json'
      ? `${JSON.stringify({ findings, problems }, null, 2)}\n`
      : formatText(findings, problems, built.files.length, built.dir),
  );
  if (problems.length > 0) return 2;
  return options.strict && findings.length > 0 ? 1 : 0;
}
