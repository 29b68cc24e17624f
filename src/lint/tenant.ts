// One tenant as the checks see it: its valid objects with their facts (facts.ts), and what several
// checks ask of the whole tenant (the types the rules use, what they read), worked out once per lint.
// Objects come in any order (lint.ts sorts the findings), so nothing here sorts 10,000 rules.
import { entityTypesTake } from '../bundle/index.ts';
import type { BundleFacts, ConnectorFacts, DirectoryFacts, Facts, LintKind, Reads, RuleFacts } from './facts.ts';

export interface LintObject {
  readonly kind: LintKind;
  readonly namespace: string;
  readonly name: string;
  /** The object as written (apiVersion, kind, metadata, spec). */
  readonly raw: Readonly<Record<string, unknown>>;
  /** The manifest file, when known. */
  readonly source?: string;
}

export interface Entry<F extends Facts> {
  readonly object: LintObject;
  readonly facts: F;
}

export interface Tenant {
  readonly namespace: string;
  /** The valid objects of each kind, in no particular order; an invalid one is an error its status states, not lint. */
  readonly rules: readonly Entry<RuleFacts>[];
  readonly bundles: readonly Entry<BundleFacts>[];
  readonly connectors: readonly Entry<ConnectorFacts>[];
  readonly directories: readonly Entry<DirectoryFacts>[];
  /** Every type a rule uses as subjectType or resourceType (whatever its state), and each of the two. */
  readonly ruleTypes: ReadonlySet<string>;
  readonly subjectTypes: ReadonlySet<string>;
  readonly resourceTypes: ReadonlySet<string>;
  /** By entity type: the properties the rules' conditions read of entities of that type. */
  readonly reads: ReadonlyMap<string, Reads>;
  /** By entity type: the property names the Directories list. */
  readonly directoryProperties: ReadonlyMap<string, ReadonlySet<string>>;
}

function mergeReads(reads: Map<string, Reads>, type: string, more: Reads): void {
  const have = reads.get(type);
  if (have === 'all') return;
  if (more === 'all') reads.set(type, 'all');
  else if (have === undefined) reads.set(type, new Set(more));
  else for (const k of more) (have as Set<string>).add(k);
}

/** The tenant `namespace` made of `entries` (objects of that namespace with valid specs). */
export function tenantOf(namespace: string, entries: readonly Entry<Facts>[]): Tenant {
  const rules: Entry<RuleFacts>[] = [];
  const bundles: Entry<BundleFacts>[] = [];
  const connectors: Entry<ConnectorFacts>[] = [];
  const directories: Entry<DirectoryFacts>[] = [];
  for (const e of entries) {
    const { object, facts } = e;
    if (facts.kind === 'Rule') rules.push({ object, facts });
    else if (facts.kind === 'Bundle') bundles.push({ object, facts });
    else if (facts.kind === 'Connector') connectors.push({ object, facts });
    else directories.push({ object, facts });
  }
  const subjectTypes = new Set<string>();
  const resourceTypes = new Set<string>();
  const reads = new Map<string, Reads>();
  for (const { facts: r } of rules) {
    subjectTypes.add(r.subjectType);
    resourceTypes.add(r.resourceType);
    mergeReads(reads, r.subjectType, r.principalReads);
    mergeReads(reads, r.resourceType, r.resourceReads);
  }
  const directoryProperties = new Map<string, Set<string>>();
  for (const { facts: d } of directories) {
    for (const [type, props] of d.types) {
      const have = directoryProperties.get(type) ?? new Set<string>();
      for (const p of props) have.add(p);
      directoryProperties.set(type, have);
    }
  }
  const ruleTypes = new Set([...subjectTypes, ...resourceTypes]);
  return { namespace, rules, bundles, connectors, directories, ruleTypes, subjectTypes, resourceTypes, reads, directoryProperties };
}

/** Whether a Bundle puts a rule in its bundle: a deployed rule its entityTypes take (bundle/selectRules' own test). */
export function selects(bundle: BundleFacts, rule: RuleFacts): boolean {
  return rule.deployed && entityTypesTake(bundle.typeSet, rule.subjectType, rule.resourceType);
}
