// `acl-operator render`: what `serve` would serve for a folder of manifests, without serving it. The
// folder is built by the offline pipeline (pipeline/offline.ts); this file only says it for people.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { commandDefaults } from '../config.ts';
import { Condition } from '../api/index.ts';
import type { BuiltBundle } from '../bundle/index.ts';
import { type Finding, formatFinding } from '../lint/index.ts';
import type { RegoVersion } from '../policy/index.ts';
import type { Offline } from '../pipeline/index.ts';
import { startOffline } from './offline.ts';
import type { DocumentProblem, ObjectState } from '../standalone/index.ts';
import type { Snapshot } from '../store/index.ts';
import { countFindings, findingsOf } from './findings.ts';

export interface RenderedBundle {
  readonly tenant: string;
  readonly name: string;
  readonly connector: string;
  readonly regoVersion: RegoVersion;
  readonly rules: readonly string[];
  readonly built: BuiltBundle;
}

export interface RenderResult {
  readonly counts: {
    rules: number;
    enforced: number;
    invalid: number;
    connectors: number;
    bundles: number;
    directories: number;
    entities: number;
  };
  readonly bundles: readonly RenderedBundle[];
  /** Everything a person must fix, one line each, in a stable order. */
  readonly problems: readonly string[];
  /** What is legal but almost certainly wrong (src/lint), in lint's order. */
  readonly findings: readonly Finding[];
}

/** The part of a status this listing reads, parsed once from what the controllers wrote. */
const ShownStatus = z.looseObject({
  phase: z.string().optional(),
  entityCount: z.number().optional(),
  conditions: z.array(Condition).optional(),
});
type ShownStatus = z.infer<typeof ShownStatus>;

/** Problems of objects come after those of documents, in this kind order, each kind in folder order. */
const PROBLEM_ORDER: readonly string[] = ['Rule', 'Directory', 'Connector', 'Bundle'];

function describeDocument(p: DocumentProblem): string {
  if (p.document === 0) return `${p.source}: ${p.message}`;
  return `${p.source} (document ${p.document}${p.name ? `, ${p.name}` : ''}): ${p.message}`;
}

/** What a person must fix about one object, as its status says it; undefined when nothing. */
function describeObject(o: ObjectState, status: ShownStatus, snapshot: Snapshot): string | undefined {
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  const id = `${o.kind} ${o.namespace}/${o.name}`;
  if (status.phase === 'Invalid') return `${id} is Invalid: ${ready?.message ?? 'invalid spec'}`;
  if (o.kind === 'Directory' && status.phase === 'Conflict') return `${id} is in Conflict: ${ready?.message ?? ''}`;
  if (o.kind === 'Bundle' && ready?.reason === 'ConnectorNotFound') {
    const connector = snapshot.tenants.get(o.namespace)?.bundles.get(o.name)?.connector ?? '?';
    return `Bundle ${o.namespace}/${o.name} names connector ${connector}, which does not exist in ${o.namespace}: no OPA can fetch it`;
  }
  return undefined;
}

function renderedBundles(snapshot: Snapshot): RenderedBundle[] {
  const bundles = [...snapshot.tenants.values()].flatMap((t) => [...t.bundles.values()]);
  return bundles
    .map((b) => ({
      tenant: b.tenant,
      name: b.name,
      connector: b.connector,
      regoVersion: b.source.regoVersion,
      rules: b.source.rules.map((r) => r.name).sort(),
      built: b.built,
    }))
    .sort((a, b) => (`${a.tenant}/${a.name}` < `${b.tenant}/${b.name}` ? -1 : 1));
}

/** What an offline build shows a person: counts, every bundle served, and each problem in one line. */
export function renderOffline(offline: Offline): RenderResult {
  const shown = offline.objects.map((o) => {
    const parsed = ShownStatus.safeParse(o.status ?? {});
    return { o, status: parsed.success ? parsed.data : {} };
  });
  const rules = shown.filter((s) => s.o.kind === 'Rule');
  const directories = shown.filter((s) => s.o.kind === 'Directory' && s.status.phase !== 'Invalid');
  const rank = (kind: string): number => PROBLEM_ORDER.indexOf(kind);
  const objectProblems = shown
    .filter((s) => rank(s.o.kind) >= 0)
    .sort((a, b) => rank(a.o.kind) - rank(b.o.kind))
    .flatMap((s) => describeObject(s.o, s.status, offline.snapshot) ?? []);
  const tenants = [...offline.snapshot.tenants.values()];
  const bundles = renderedBundles(offline.snapshot);
  return {
    counts: {
      rules: rules.length,
      enforced: rules.filter((s) => s.status.phase === 'Enforced').length,
      invalid: rules.filter((s) => s.status.phase === 'Invalid').length,
      connectors: tenants.reduce((n, t) => n + t.connectors.size, 0),
      bundles: bundles.length,
      directories: directories.length,
      entities: directories.reduce((n, s) => n + (s.status.entityCount ?? 0), 0),
    },
    bundles,
    problems: [...offline.problems.map(describeDocument), ...objectProblems],
    findings: findingsOf(offline.objects),
  };
}

/** The listing a person reads: one block per bundle, its files, and (optionally) their text. */
export function formatRender(result: RenderResult, options: { rego: boolean }): string {
  const { counts } = result;
  const n = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;
  const lines = [
    `${n(counts.rules, 'rule')} (${counts.enforced} Enforced, ${counts.invalid} Invalid), ${n(counts.connectors, 'connector')}, ${n(counts.bundles, 'bundle')}, ${counts.directories === 1 ? '1 directory' : `${counts.directories} directories`} (${n(counts.entities, 'entity').replace(/entitys$/, 'entities')}).`,
  ];
  for (const b of result.bundles) {
    lines.push('', `Bundle ${b.tenant}/${b.name}  connector ${b.connector}  Rego v${b.regoVersion}  revision ${b.built.revision}`);
    lines.push(`  rules:   ${b.rules.length > 0 ? b.rules.join(', ') : '(none: OPA will deny everything)'}`);
    lines.push(`  digest:  ${b.built.digest}`, `  etag:    ${b.built.etag}`, `  archive: ${b.built.bytes.length} bytes, tar.gz`);
    lines.push(`    -rw-r--r-- 0/0 ${String(Buffer.byteLength(b.built.manifest)).padStart(7)} 1970-01-01 00:00 .manifest`);
    lines.push(`    -rw-r--r-- 0/0 ${String(Buffer.byteLength(b.built.rego)).padStart(7)} 1970-01-01 00:00 policy.rego`);
    if (options.rego) {
      lines.push('', '--- .manifest', b.built.manifest.trimEnd(), '--- policy.rego', b.built.rego.trimEnd());
    }
  }
  if (result.problems.length > 0) lines.push('', `${result.problems.length} problem(s):`, ...result.problems.map((p) => `  - ${p}`));
  if (result.findings.length > 0)
    lines.push('', `${countFindings(result.findings.length)}:`, ...result.findings.map((f) => `  - ${formatFinding(f)}`));
  return `${lines.join('\n')}\n`;
}

/** Writes each bundle to <out>/<tenant>/<bundle>.tar.gz; the first failure is said in one line. */
async function writeArchives(out: string, bundles: RenderResult['bundles']): Promise<string | undefined> {
  for (const b of bundles) {
    const target = join(out, b.tenant, `${b.name}.tar.gz`);
    try {
      await mkdir(join(out, b.tenant), { recursive: true });
      await writeFile(target, b.built.bytes);
    } catch (err) {
      return `--out ${out}: cannot write ${target}: ${err instanceof Error ? err.message : String(err)}`;
    }
    process.stderr.write(`Wrote ${target}\n`);
  }
  return undefined;
}

/** `acl-operator render`: exit 0 when every manifest was used, 1 when some were problems, 2 on bad usage. */
export async function renderCommand(argv: string[], usage: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      manifests: { type: 'string' },
      out: { type: 'string' },
      'no-rego': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const dir = values.manifests ?? commandDefaults(process.env).manifests;
  const built = await startOffline('render', dir, usage);
  if (typeof built === 'number') return built;
  process.stderr.write(`Read ${built.files.length} file(s) from ${built.dir}\n`);
  const result = renderOffline(built);
  process.stdout.write(formatRender(result, { rego: !values['no-rego'] }));
  const unwritten = values.out ? await writeArchives(values.out, result.bundles) : undefined;
  if (unwritten !== undefined) {
    process.stderr.write(`${unwritten}\n`);
    return 2;
  }
  return result.problems.length > 0 ? 1 : 0;
}
