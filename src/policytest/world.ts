// What the manifests hold, as the tests read it: per tenant, its Rules and their phases, its bundles
// (the archive OPA loads and the entityTypes filter) and the rule index and directory the service
// decides with, all taken from the offline build (what `serve` would serve).
import { z } from 'zod';
import { buildIndex, EMPTY_DIRECTORY, type EntityDirectory, type RuleIndex } from '../policy/index.ts';
import type { Offline } from '../pipeline/index.ts';

export interface WorldBundle {
  readonly tenant: string;
  readonly name: string;
  /** The entityTypes filter ([]: every rule of the tenant). */
  readonly entityTypes: readonly string[];
  /** The names of the rules it carries (the tenant's Enforced rules its filter takes): what its OPA decides with. */
  readonly rules: readonly string[];
  /** The tar.gz an OPA would download. */
  readonly bytes: Uint8Array;
}

export interface TenantWorld {
  readonly name: string;
  /** Every Rule of the tenant, by name, with its phase (Enforced, Proposed, Invalid, ...). */
  readonly rules: ReadonlyMap<string, string>;
  readonly bundles: ReadonlyMap<string, WorldBundle>;
  /** What POST /authorization decides with (an empty index for a tenant without deployed rules). */
  readonly index: RuleIndex;
  readonly directory: EntityDirectory;
}

export type World = ReadonlyMap<string, TenantWorld>;

const Phase = z.looseObject({ phase: z.string().optional() });
const EntityTypes = z.array(z.string());

/** The tenants of an offline build: every namespace holding a Rule, Connector, Bundle or Directory. */
export function worldOf(offline: Offline): World {
  const names = new Set<string>(offline.snapshot.tenants.keys());
  const rules = new Map<string, Map<string, string>>();
  for (const o of offline.objects) {
    names.add(o.namespace);
    if (o.kind !== 'Rule') continue;
    const phase = Phase.safeParse(o.status ?? {});
    const own = rules.get(o.namespace) ?? new Map<string, string>();
    own.set(o.name, (phase.success ? phase.data.phase : undefined) ?? 'Unknown');
    rules.set(o.namespace, own);
  }
  const world = new Map<string, TenantWorld>();
  for (const name of [...names].sort()) {
    const served = offline.snapshot.tenants.get(name);
    const bundles = new Map<string, WorldBundle>();
    for (const b of served?.bundles.values() ?? []) {
      // Written by the Bundle controller as JSON of a string list: anything else is a bug, and throws.
      const entityTypes = EntityTypes.parse(JSON.parse(b.source.entityTypes));
      const ruleNames = b.source.rules.map((r) => r.name);
      bundles.set(b.name, { tenant: name, name: b.name, entityTypes, rules: ruleNames, bytes: b.built.bytes });
    }
    world.set(name, {
      name,
      rules: rules.get(name) ?? new Map(),
      bundles,
      index: served?.index ?? buildIndex(name, []),
      directory: served?.directory ?? EMPTY_DIRECTORY,
    });
  }
  return world;
}
