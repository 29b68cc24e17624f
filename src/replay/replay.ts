// A recorded decision decided again by the candidate folder, exactly as `serve` would decide it: a
// service line by the tenant's whole rule index and directory (POST /authorization's decide()), an
// OPA line by the rules its bundle carries and the directory, as that OPA would with the candidate's
// bundle. A tenant or bundle the candidate lacks is a cause, not a decision.
import { buildIndex, decide, type RuleIndex } from '../policy/index.ts';
import type { TenantWorld, World, WorldBundle } from '../policytest/index.ts';
import type { Change, Recorded, Replayed, Unreplayable, Verdict } from './types.ts';

/** How a decision moved from the recorded one. */
export function changeOf(before: Verdict, after: Verdict): Change {
  if (before === after) return 'unchanged';
  return before === 'allow' ? 'allow-to-deny' : 'deny-to-allow';
}

/** The index of the rules one bundle carries, cut from its tenant's index (rules are shared, not compiled again). */
function bundleIndex(tenant: TenantWorld, bundle: WorldBundle): RuleIndex {
  const carried = new Set(bundle.rules);
  return buildIndex(
    tenant.name,
    tenant.index.rules.filter((r) => carried.has(r.model.name)),
  );
}

/** Decides records again against `world` (one index per bundle, built when first needed and kept). */
export function createReplayer(world: World): (record: Recorded) => Replayed | Unreplayable {
  const indexes = new Map<WorldBundle, RuleIndex>();
  const indexOf = (tenant: TenantWorld, bundle: WorldBundle): RuleIndex => {
    let index = indexes.get(bundle);
    if (index === undefined) {
      index = bundleIndex(tenant, bundle);
      indexes.set(bundle, index);
    }
    return index;
  };
  return (record) => {
    const tenant = world.get(record.tenant);
    if (tenant === undefined) {
      return {
        ok: false,
        cause: 'unknown-tenant',
        where: record.where,
        detail: `the candidate has no tenant ${JSON.stringify(record.tenant)}`,
      };
    }
    let index = tenant.index;
    if (record.source === 'opa') {
      const bundle = record.bundle === undefined ? undefined : tenant.bundles.get(record.bundle);
      if (bundle === undefined) {
        const named = record.bundle === undefined ? 'no bundle named' : `no bundle ${JSON.stringify(record.bundle)}`;
        return {
          ok: false,
          cause: 'unknown-bundle',
          where: record.where,
          detail: `the candidate's tenant ${JSON.stringify(record.tenant)} has ${named}`,
        };
      }
      index = indexOf(tenant, bundle);
    }
    const d = decide(index, record.input, tenant.directory);
    const decision: Verdict = d.allow ? 'allow' : 'deny';
    const change = changeOf(record.decision, decision);
    return d.rule ? { record, decision, rule: d.rule.model.name, change } : { record, decision, change };
  };
}
