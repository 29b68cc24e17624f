// `acl-operator status --state-dir <dir>`: the state folder as tables that read like `kubectl get`
// (spec 3.4, the connector and bundle views, sync activity), for people without a cluster.
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { commandDefaults } from '../config.ts';
import { isObject } from '../api/index.ts';
import type { RecentDecision } from '../fleet/index.ts';
import { openStateFolder, type ObjectState, type StateFolder } from '../standalone/index.ts';

type Row = readonly string[];

/** What `status` reads of a state folder (never writes). */
export type StatusSource = Pick<StateFolder, 'dir' | 'objects' | 'activity' | 'agents' | 'decisions' | 'problems'>;

/** Columns padded like kubectl: three spaces between, no trailing spaces. */
export function table(header: Row, rows: readonly Row[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: Row): string =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

function rec(v: unknown): Record<string, unknown> {
  return isObject(v) ? v : {};
}
const str = (v: unknown, fallback = '<none>'): string => (v === undefined || v === null || v === '' ? fallback : String(v));
const records = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? (v as unknown[]) : []).map(rec);

function conditionOf(s: ObjectState, type: string): Record<string, unknown> | undefined {
  return records(s.status?.['conditions']).find((c) => c['type'] === type);
}

function readyMessage(s: ObjectState): string {
  const ready = conditionOf(s, 'Ready');
  return ready && ready['status'] !== 'True' ? str(ready['message'], '') : '';
}

/** Translation as a person should read it: Stale when the status lags the spec's generation. */
export function translationState(s: ObjectState): string {
  const t = rec(s.status?.['translation']);
  if (t['status'] === undefined) return 'Pending';
  if (typeof t['generation'] === 'number' && t['generation'] < s.generation) return 'Stale';
  return str(t['status']);
}

const byKey = (a: ObjectState, b: ObjectState): number => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1);

/** `ns/name`, or `name` in the default namespace, as kubectl reads a reference. */
function findObject(all: readonly ObjectState[], kind: ObjectState['kind'], ref: string): ObjectState | undefined {
  const [namespace, name] = ref.includes('/') ? ref.split('/') : ['default', ref];
  return all.find((s) => s.kind === kind && s.namespace === namespace && s.name === name);
}

function formatRule(s: ObjectState): string {
  const spec = rec(s.raw['spec']);
  const t = rec(s.status?.['translation']);
  return [
    `Rule ${s.namespace}/${s.name} (generation ${s.generation})`,
    `  State        ${str(spec['state'], 'Draft')}`,
    `  Phase        ${str(s.status?.['phase'], 'Pending')}`,
    `  Condition    ${str(spec['condition'], '(none)')}`,
    ...records(s.status?.['conditions']).map(
      (c) => `  ${str(c['type']).padEnd(12)} ${str(c['status'])} ${str(c['reason'], '')}: ${str(c['message'], '')}`,
    ),
    `  Translation  ${translationState(s)} (generation ${str(t['generation'], '?')})${t['message'] ? `: ${String(t['message'])}` : ''}`,
    '',
    str(t['rego'], '(no translation)'),
    '',
  ].join('\n');
}

/** Why an agent is not simply current: it loads another bundle with the same roots, or reported an error. */
function agentProblem(a: Record<string, unknown>): string {
  if (Array.isArray(a['alsoLoads'])) return `also loads ${a['alsoLoads'].join(', ')}: only one can activate`;
  if (!a['error']) return '';
  const err = rec(a['error']);
  return `${a['httpCode'] ? `${String(a['httpCode'])} ` : ''}${str(err['code'], '')}: ${str(err['message'], '')}`;
}

/** The agents counted by the key they verify with: `acl-… 12, acl-… 3, no label 2`. */
function keyCountsLine(agents: Record<string, unknown> | undefined): string {
  const counts = records(agents?.['signingKeys']).map((k) => `${str(k['kid'], 'no label')} ${str(k['agents'], '0')}`);
  return counts.length === 0 ? '' : `Keys the agents verify with: ${counts.join(', ')}\n`;
}

function agentsTable(agents: Record<string, unknown> | undefined): string {
  const list = records(agents?.['list']);
  if (list.length === 0) return "  none has reported (configure OPA's status plugin: docs/opa.md)";
  return `${keyCountsLine(agents)}${table(
    ['AGENT', 'STATE', 'VERSION', 'CLIENT IP', 'LAST REPORT', 'REVISION', 'KEY', 'PROBLEM'],
    list.map((a) => [
      str(a['id']),
      str(a['state']),
      str(a['version']),
      str(a['clientIp']),
      str(a['lastReport']),
      str(a['activeRevision']),
      // No acl-signing-key label: a configuration acl-operator did not print.
      str(a['signingKey'], '<no label>'),
      agentProblem(a),
    ]),
  )}`;
}

/** The newest 20 decisions, inputs cut to 100 characters so a row stays one line. */
function decisionsTable(decisions: readonly RecentDecision[]): string {
  if (decisions.length === 0) return "  none reported (configure OPA's decision_logs: docs/opa.md)";
  return table(
    ['TIME', 'AGENT', 'DECISION', 'PATH', 'REVISION', 'INPUT'],
    decisions.slice(0, 20).map((d) => {
      const input = JSON.stringify(d.input) ?? '';
      return [d.time, d.agent, d.decision, str(d.path), str(d.revision), input.length > 100 ? `${input.slice(0, 99)}…` : input];
    }),
  );
}

async function formatBundle(state: StatusSource, s: ObjectState): Promise<string> {
  const activity = (await state.activity()).find((a) => a.namespace === s.namespace && a.bundle === s.name);
  const st = s.status ?? {};
  const rolled = conditionOf(s, 'RolledOut');
  const rotated = conditionOf(s, 'KeyRotated');
  const agents = await state.agents(s.namespace, s.name);
  const decisions = (await state.decisions()).find((d) => d.namespace === s.namespace && d.bundle === s.name)?.decisions ?? [];
  return [
    `Bundle ${s.namespace}/${s.name}: revision ${str(st['revision'])}, ${str(st['ruleCount'], '0')} rule(s), ${str(st['digest'])}, last sync ${str(st['lastSync'], 'never')}`,
    `  RolledOut   ${rolled ? `${str(rolled['status'])} ${str(rolled['reason'], '')}: ${str(rolled['message'], '')}` : '<none>'}`,
    `  KeyRotated  ${rotated ? `${str(rotated['status'])} ${str(rotated['reason'], '')}: ${str(rotated['message'], '')}` : '<none>'}`,
    // The kid that signs the revision served (the bundle reconcile's status.signingKey; absent when unsigned).
    ...(typeof st['signingKey'] === 'string' ? [`  Signed by   ${st['signingKey']}`] : []),
    '',
    'Sync activity (newest first):',
    table(
      ['DATE', 'REVISION', 'CLIENT IP', 'USER AGENT', 'STATUS'],
      (activity?.records ?? []).map((r) => [r.time, str(r.revision), r.clientIp, r.userAgent || '<none>', String(r.status)]),
    ),
    '',
    `OPA agents (status reports; forgotten after ${str(agents?.['expirySeconds'], '?')} s of silence):`,
    agentsTable(agents),
    '',
    'Recent decisions of those agents (newest first):',
    decisionsTable(decisions),
    '',
  ].join('\n');
}

/** The code of the object's first lint finding (its Warning condition's reason), as kubectl get shows it. */
function warningCode(s: ObjectState): string {
  return str(conditionOf(s, 'Warning')?.['reason'], '');
}

function rulesTable(rules: readonly ObjectState[]): string {
  return table(
    ['NAMESPACE', 'NAME', 'STATE', 'PHASE', 'SUBJECT', 'ACTIONS', 'RESOURCE', 'TRANSLATION', 'SHADOW', 'WARNING', 'MESSAGE'],
    rules.map((s) => {
      const spec = rec(s.raw['spec']);
      return [
        s.namespace,
        s.name,
        str(spec['state'], 'Draft'),
        str(s.status?.['phase'], 'Pending'),
        str(spec['subjectType']),
        Array.isArray(spec['actions']) ? spec['actions'].join(',') : '',
        str(spec['resourceType']),
        translationState(s),
        // What live traffic says of a Proposed rule or one marked for removal (kubectl's SHADOW column).
        str(rec(s.status?.['shadow'])['summary'], ''),
        warningCode(s),
        readyMessage(s),
      ];
    }),
  );
}

function connectorsTable(connectors: readonly ObjectState[]): string {
  return table(
    ['NAMESPACE', 'NAME', 'PHASE', 'TOKEN ISSUED', 'TOKEN SECRET', 'BUNDLES', 'WARNING', 'MESSAGE'],
    connectors.map((s) => {
      const st = s.status ?? {};
      return [
        s.namespace,
        s.name,
        str(st['phase'], 'Pending'),
        str(st['tokenIssuedAt']),
        str(st['tokenSecretName']),
        Array.isArray(st['bundles']) ? st['bundles'].join(',') || '<none>' : '<none>',
        warningCode(s),
        readyMessage(s),
      ];
    }),
  );
}

function bundleRow(s: ObjectState): Row {
  const st = s.status ?? {};
  const digest = str(st['digest']);
  const rolled = conditionOf(s, 'RolledOut');
  const rotated = conditionOf(s, 'KeyRotated');
  // The message of what is wrong: Ready first, then the rollout (which agents are behind or failing),
  // then a key rotation (which agents still verify with the previous key).
  const falseMessage = (c: Record<string, unknown> | undefined): string => (c && c['status'] === 'False' ? str(c['message'], '') : '');
  const message = readyMessage(s) || falseMessage(rolled) || falseMessage(rotated);
  return [
    s.namespace,
    s.name,
    str(rec(s.raw['spec'])['connector']),
    str(st['phase'], 'Pending'),
    str(st['revision']),
    str(st['ruleCount']),
    str(rec(st['agents'])['rollout']),
    str(rolled?.['status']),
    str(rotated?.['status']),
    digest.length > 19 ? `${digest.slice(0, 19)}…` : digest,
    str(st['lastSync'], 'never'),
    warningCode(s),
    message,
  ];
}

/** The bundles table, and where their OPA configurations are once there is a bundle. */
function bundlesTable(bundles: readonly ObjectState[], stateDir: string): string {
  const text = table(
    [
      'NAMESPACE',
      'NAME',
      'CONNECTOR',
      'PHASE',
      'REVISION',
      'RULES',
      'AGENTS',
      'ROLLED OUT',
      'KEY ROTATED',
      'DIGEST',
      'LAST SYNC',
      'WARNING',
      'MESSAGE',
    ],
    bundles.map(bundleRow),
  );
  if (bundles.length === 0) return text;
  return `${text}\nOne OPA per bundle (every bundle's roots are ["acl"]): configurations in ${join(stateDir, 'opa', '<tenant>', '<bundle>.yaml')}`;
}

function directoriesTable(directories: readonly ObjectState[]): string {
  return table(
    ['NAMESPACE', 'NAME', 'PHASE', 'ENTITIES', 'WARNING', 'MESSAGE'],
    directories.map((s) => {
      const st = s.status ?? {};
      return [s.namespace, s.name, str(st['phase'], 'Pending'), str(st['entityCount']), warningCode(s), readyMessage(s)];
    }),
  );
}

async function problemsTable(state: StatusSource): Promise<string> {
  const problems = await state.problems();
  if (problems.length === 0) return 'No problems in the manifests folder.';
  return table(
    ['FILE', 'DOCUMENT', 'NAME', 'PROBLEM'],
    problems.map((p) => [p.source, String(p.document), str(p.name), p.message]),
  );
}

/** Rules, connectors and bundles always (an empty table says there are none); directories only when there are some. */
async function formatOverview(state: StatusSource): Promise<string> {
  const all = state.objects();
  const of = (kind: ObjectState['kind']) => all.filter((s) => s.kind === kind).sort(byKey);
  const directories = of('Directory');
  const sections = [
    rulesTable(of('Rule')),
    connectorsTable(of('Connector')),
    bundlesTable(of('Bundle'), state.dir),
    ...(directories.length > 0 ? [directoriesTable(directories)] : []),
    await problemsTable(state),
  ];
  return `${sections.join('\n\n')}\n`;
}

/** The overview, or one rule or one bundle (`ns/name`) in detail; a missing one is said, not thrown. */
export async function formatStatus(state: StatusSource, options: { rule?: string; bundle?: string } = {}): Promise<string> {
  if (options.rule !== undefined) {
    const s = findObject(state.objects(), 'Rule', options.rule);
    return s ? formatRule(s) : `Rule ${options.rule} is not in the state folder\n`;
  }
  if (options.bundle !== undefined) {
    const s = findObject(state.objects(), 'Bundle', options.bundle);
    return s ? formatBundle(state, s) : `Bundle ${options.bundle} is not in the state folder\n`;
  }
  return formatOverview(state);
}

/** `acl-operator status`: the tables of a standalone state folder; exit 2 when the folder is not one. */
export async function statusCommand(argv: string[], usage: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'state-dir': { type: 'string' },
      rule: { type: 'string' },
      bundle: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const dir = values['state-dir'] ?? commandDefaults(process.env).stateDir;
  try {
    await access(join(dir, 'objects'));
  } catch {
    process.stderr.write(
      `${dir} is not the state folder of a standalone service (no objects/ in it); start one with acl-operator --manifests <dir> --state-dir ${dir}\n`,
    );
    return 2;
  }
  const state = openStateFolder(dir);
  await state.load();
  process.stdout.write(
    await formatStatus(state, { ...(values.rule ? { rule: values.rule } : {}), ...(values.bundle ? { bundle: values.bundle } : {}) }),
  );
  return 0;
}
