// The checks, one small function each over a tenant's facts (tenant.ts): what is legal but almost
// certainly wrong, said on the object to change. A new check is one entry here, one test in
// checks.test.ts and one row in docs/testing.md ("## Lint"); its code is never renamed.
import { pathText } from '../policy/index.ts';
import type { RuleFacts } from './facts.ts';
import { type Entry, type LintObject, selects, type Tenant } from './tenant.ts';

/** A finding before lint.ts adds its code and the object's identity. */
export interface Draft {
  readonly object: LintObject;
  /** What is wrong, naming the construct; stable while the object's own facts are (it identifies the finding). */
  readonly message: string;
  /** How to fix it. */
  readonly hint: string;
}

export interface Check {
  /** Stable, UpperCamelCase: the Event reason and the condition reason. */
  readonly code: string;
  run(t: Tenant): Iterable<Draft>;
}

const quote = (s: string): string => JSON.stringify(s);

/** Edit distance, for "did you mean" (short strings only). */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The type of `known` closest to a misspelled `type`, when one is close enough to be a typo. */
function nearest(type: string, known: ReadonlySet<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(type.length / 3)) + 1;
  for (const k of [...known].sort()) {
    const d = distance(type.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** The tenant's Bundles by name, for hints. */
const bundleNames = (t: Tenant): string =>
  t.bundles
    .map((b) => b.object.name)
    .sort()
    .join(', ');

const notArchived = (r: Entry<RuleFacts>): boolean => r.facts.state !== 'Archived';

const propertiesPath: Check = {
  code: 'PropertiesPath',
  *run(t) {
    for (const r of t.rules.filter(notArchived)) {
      for (const p of r.facts.propertiesPaths) {
        const type = p.root === 'principal' ? r.facts.subjectType : p.root === 'resource' ? r.facts.resourceType : undefined;
        // A Directory whose entities of that type have a property named "properties" makes the path real.
        if (type !== undefined && t.directoryProperties.get(type)?.has('properties')) continue;
        const shape =
          p.root === 'action'
            ? "an AuthZEN action's properties are actionProperties"
            : `a request's ${p.root === 'principal' ? 'subject' : 'resource'}.properties are flattened into ${p.root}`;
        yield {
          object: r.object,
          message: `the condition reads ${p.text}, but ${shape}, so it looks for a property named "properties" that requests do not send`,
          hint: p.flattened === p.root ? `read ${p.root} itself, e.g. "email" in ${p.root}` : `read ${p.flattened} instead`,
        };
      }
    }
  },
};

const stateNotSet: Check = {
  code: 'StateNotSet',
  *run(t) {
    for (const r of t.rules) {
      if (r.facts.stateWritten) continue;
      yield {
        object: r.object,
        message: 'spec.state is not set, so the rule is a Draft: the service does not decide with it and no bundle carries it',
        hint: 'write state: Enforced to deploy it, or state: Draft to say it is a draft',
      };
    }
  },
};

const negatedMissing: Check = {
  code: 'NegatedMissing',
  *run(t) {
    for (const r of t.rules.filter(notArchived)) {
      for (const p of r.facts.negatedPaths) {
        yield {
          object: r.object,
          message: `the condition reads ${p.text} only under "!": for a request without it, the negation is an error, not true, so the rule does not match`,
          hint: `guard it, e.g. !(${p.guard}) || <the test of ${p.text}>, so that a request without ${p.text} counts as not set`,
        };
      }
    }
  },
};

const ruleNotBundled: Check = {
  code: 'RuleNotBundled',
  *run(t) {
    if (t.bundles.length === 0) return;
    for (const r of t.rules) {
      if (!r.facts.deployed || t.bundles.some((b) => selects(b.facts, r.facts))) continue;
      const { subjectType, resourceType } = r.facts;
      yield {
        object: r.object,
        message: `no Bundle selects this deployed rule (subjectType ${subjectType}, resourceType ${resourceType}): the service decides with it, but no OPA sidecar gets it`,
        hint: `add ${subjectType} or ${resourceType} to the entityTypes of a Bundle (${bundleNames(t)}), or add a Bundle without entityTypes`,
      };
    }
  },
};

const bundleSelectsNoRules: Check = {
  code: 'BundleSelectsNoRules',
  *run(t) {
    const deployed = t.rules.filter((r) => r.facts.deployed);
    for (const b of t.bundles) {
      if (deployed.some((r) => selects(b.facts, r.facts))) continue;
      const types = b.facts.entityTypes;
      yield {
        object: b.object,
        message: `selects no deployed rule${types.length > 0 ? ` (entityTypes: ${types.join(', ')})` : ''}: the OPA sidecars that load it deny every request`,
        hint:
          types.length > 0
            ? 'deploy a rule (state: Enforced) whose subjectType or resourceType is listed in entityTypes, or change entityTypes'
            : 'deploy a rule of this namespace (state: Enforced)',
      };
    }
  },
};

const entityTypeUnused: Check = {
  code: 'EntityTypeUnused',
  *run(t) {
    for (const b of t.bundles) {
      for (const type of b.facts.entityTypes) {
        if (t.ruleTypes.has(type)) continue;
        const near = nearest(type, t.ruleTypes);
        yield {
          object: b.object,
          message: `entityTypes lists ${quote(type)}, which no rule of the namespace uses as subjectType or resourceType`,
          hint: near ? `did you mean ${quote(near)}? Otherwise remove it` : 'fix the type, or remove it from entityTypes',
        };
      }
    }
  },
};

const connectorUnused: Check = {
  code: 'ConnectorUnused',
  *run(t) {
    const named = new Set(t.bundles.map((b) => b.facts.connector));
    for (const c of t.connectors) {
      if (named.has(c.object.name)) continue;
      yield {
        object: c.object,
        message: 'no Bundle names this connector, so its token fetches nothing',
        hint: `name it in the spec.connector of a Bundle, or delete it`,
      };
    }
  },
};

const directoryTypeUnused: Check = {
  code: 'DirectoryTypeUnused',
  *run(t) {
    for (const d of t.directories) {
      for (const type of d.facts.types.keys()) {
        if (t.ruleTypes.has(type)) continue;
        const near = nearest(type, t.ruleTypes);
        yield {
          object: d.object,
          message: `lists entities of type ${quote(type)}, which no rule uses as subjectType or resourceType, so no decision reads them`,
          hint: near ? `did you mean ${quote(near)}? Otherwise remove these entities` : 'fix the type, or remove these entities',
        };
      }
    }
  },
};

/** How a rule reads a property of `type`'s entities: principal.x, resource.x, or either. */
function readersOf(t: Tenant, type: string, property: string): string {
  const asSubject = t.subjectTypes.has(type);
  const asResource = t.resourceTypes.has(type);
  const principal = `${pathText({ root: 'principal', keys: [property] })} in a rule whose subjectType is ${type}`;
  const resource = `${pathText({ root: 'resource', keys: [property] })} in a rule whose resourceType is ${type}`;
  return asSubject && asResource ? `${principal}, or ${resource}` : asSubject ? principal : resource;
}

const directoryPropertyUnread: Check = {
  code: 'DirectoryPropertyUnread',
  *run(t) {
    for (const d of t.directories) {
      for (const [type, properties] of d.facts.types) {
        const reads = t.reads.get(type);
        // A type no rule uses is DirectoryTypeUnused; a condition reading the whole entity reads every property.
        if (!t.ruleTypes.has(type) || reads === 'all') continue;
        for (const property of properties) {
          if (reads?.has(property)) continue;
          yield {
            object: d.object,
            message: `property ${quote(property)} of ${type} entities is read by no rule: no decision uses it and no bundle carries it`,
            hint: `remove it, or read it in a condition: ${readersOf(t, type, property)}`,
          };
        }
      }
    }
  },
};

const duplicateRule: Check = {
  code: 'DuplicateRule',
  *run(t) {
    // Deployed rules only: a Draft copy of a rule is how an edit starts, and decides nothing.
    const deployed = t.rules.filter((x) => x.facts.deployed);
    const first = new Map<string, Entry<RuleFacts>>();
    for (const r of deployed) {
      const earlier = first.get(r.facts.signature);
      if (!earlier || r.object.name < earlier.object.name) first.set(r.facts.signature, r);
    }
    for (const r of deployed) {
      const earlier = first.get(r.facts.signature);
      if (!earlier || earlier === r) continue;
      yield {
        object: r.object,
        message: `decides exactly as rule ${earlier.object.name}: both are deployed, with the same subjectType, actions, resourceType and condition`,
        hint: 'delete one of the two, or make them differ: while both are in force, narrowing one changes nothing',
      };
    }
  },
};

/** Every check, in the order findings of one object are listed (and docs/testing.md's table). */
export const CHECKS: readonly Check[] = [
  propertiesPath,
  stateNotSet,
  negatedMissing,
  ruleNotBundled,
  bundleSelectsNoRules,
  entityTypeUnused,
  connectorUnused,
  directoryTypeUnused,
  directoryPropertyUnread,
  duplicateRule,
];
