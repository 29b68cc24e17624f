// `acl-operator serve --help`, written from the flags table: a flag's help, default and variable
// come from its row, so the text cannot drift from what readConfig accepts.
import { DEFAULTS, FLAG_NAMES, FLAGS, type Flag, type FlagName, type Section } from './flags.ts';

const INTRO = `Usage: acl-operator [serve] [options]

Runs the service: POST /authorization and the OPA bundle endpoint on the API listener, metrics and
health on the ops listener. With --manifests it runs standalone on a folder of YAML manifests;
without it, as the Kubernetes operator: it watches Rules, Connectors, Bundles and labelled Secrets
through the API server (in-cluster credentials, or KUBECONFIG / --kubeconfig).
`;

const HEADINGS: Record<Section, string> = {
  common: 'Options (environment variable in brackets):',
  standalone: 'Standalone mode only:',
  kubernetes: 'Kubernetes mode only:',
};

// Flag names take 29 columns after the indent, so every help text starts at column 32.
const NAME_COLUMNS = 28;
const INDENT = '  ';
const CONTINUATION = ' '.repeat(INDENT.length + NAME_COLUMNS + 1);

/** One flag's lines: the flag and its first help line, then the rest aligned, the variable at the end. */
function flagLines(name: FlagName): string[] {
  const flag: Flag = FLAGS[name];
  const fallback = DEFAULTS[name];
  const variable = flag.arg === undefined ? `[${flag.env}=true]` : `[${flag.env}]`;
  const help = flag.help.map((line) => line.replace('{default}', String(fallback)));
  const last = help.length - 1;
  help[last] = help[last] === '' ? variable : `${help[last]} ${variable}`;
  const usage = flag.arg === undefined ? `--${name}` : `--${name} ${flag.arg}`;
  return help.map((line, i) => (i === 0 ? `${INDENT}${usage.padEnd(NAME_COLUMNS)} ${line}` : `${CONTINUATION}${line}`));
}

function sectionLines(section: Section): string[] {
  const names = FLAG_NAMES.filter((name) => FLAGS[name].section === section);
  return [HEADINGS[section], ...names.flatMap((name) => flagLines(name))];
}

/** The whole --help text of serve: the introduction, then each section's flags, then -h. */
export function serveUsage(): string {
  const help = `${INDENT}${'-h, --help'.padEnd(NAME_COLUMNS)} Show this help`;
  const sections = [sectionLines('common'), sectionLines('standalone'), [...sectionLines('kubernetes'), help]];
  return `${INTRO}\n${sections.map((lines) => `${lines.join('\n')}\n`).join('\n')}`;
}
