// `acl-operator render`: what the operator would serve for a folder of manifests, without serving it.
import type { Manifest, ManifestError } from '../api/index.ts';
import { buildBundle, selectRules, type BuiltBundle } from '../bundle/index.ts';
import { entitiesOf } from '../controller/index.ts';
import { buildDirectory, ruleModel, type EntityDirectory, type RegoVersion, type RuleModel } from '../policy/index.ts';

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
}

function describeError(e: ManifestError): string {
  return `${e.source} (document ${e.document + 1}${e.name ? `, ${e.name}` : ''}): ${e.message}`;
}

/** Compiles every rule and builds every bundle at revision 1. A bad object is reported and skipped. */
export async function renderManifests(manifests: readonly Manifest[], readErrors: readonly ManifestError[]): Promise<RenderResult> {
  const problems = readErrors.map(describeError);
  const seen = new Set<string>();
  const unique = manifests.filter((m) => {
    const key = `${m.kind}/${m.object.metadata.namespace}/${m.object.metadata.name}`;
    if (seen.has(key)) {
      problems.push(`${key} is defined more than once; the first definition is used`);
      return false;
    }
    seen.add(key);
    return true;
  });
  const models: RuleModel[] = [];
  let invalid = 0;
  for (const m of unique) {
    if (m.kind !== 'Rule') continue;
    const res = ruleModel(m.object);
    if (res.ok) models.push(res.model);
    else {
      invalid++;
      problems.push(`Rule ${m.object.metadata.namespace}/${m.object.metadata.name} is Invalid: ${res.error.message}`);
    }
  }
  // Each tenant's directory as the service builds it: Directories in name order, the first listing wins.
  const directories = unique
    .flatMap((m) => (m.kind === 'Directory' ? [m.object] : []))
    .sort((a, b) => (`${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}` ? -1 : 1));
  const listedBy = new Map<string, string>();
  for (const d of directories) {
    for (const e of d.spec.entities) {
      const key = `${d.metadata.namespace}\u0000${e.type}\u0000${e.id}`;
      const first = listedBy.get(key);
      if (first === undefined) listedBy.set(key, d.metadata.name);
      else
        problems.push(
          `Directory ${d.metadata.namespace}/${d.metadata.name} lists ${e.type} ${JSON.stringify(e.id)}, which Directory ${first} lists too: ${first}'s properties are used`,
        );
    }
  }
  const directoryOf = (tenant: string): EntityDirectory =>
    buildDirectory(directories.filter((d) => d.metadata.namespace === tenant).flatMap(entitiesOf));
  const connectors = new Set(
    unique.filter((m) => m.kind === 'Connector').map((m) => `${m.object.metadata.namespace}/${m.object.metadata.name}`),
  );
  const bundles: RenderedBundle[] = [];
  for (const m of unique) {
    if (m.kind !== 'Bundle') continue;
    const { namespace: tenant, name } = m.object.metadata;
    const { connector, entityTypes, regoVersion } = m.object.spec;
    if (!connectors.has(`${tenant}/${connector}`))
      problems.push(`Bundle ${tenant}/${name} names connector ${connector}, which does not exist in ${tenant}: no OPA can fetch it`);
    const rules = selectRules(tenant, models, { entityTypes }).sort((a, b) => (a.name < b.name ? -1 : 1));
    const built = await buildBundle(
      { tenant, name, connector, regoVersion: regoVersion as RegoVersion, rules, entityTypes, directory: directoryOf(tenant) },
      1,
    );
    bundles.push({ tenant, name, connector, regoVersion: regoVersion as RegoVersion, rules: rules.map((r) => r.name), built });
  }
  bundles.sort((a, b) => (`${a.tenant}/${a.name}` < `${b.tenant}/${b.name}` ? -1 : 1));
  return {
    counts: {
      rules: unique.filter((m) => m.kind === 'Rule').length,
      enforced: models.filter((r) => r.state === 'Enforced').length,
      invalid,
      connectors: connectors.size,
      bundles: bundles.length,
      directories: directories.length,
      entities: listedBy.size,
    },
    bundles,
    problems,
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
  return `${lines.join('\n')}\n`;
}
