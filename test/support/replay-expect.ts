// What `acl-operator replay` must report for the recorded log of replay-log.ts, worked out from the
// model of replay-traffic.ts: counts from the requests the generator made (which rule allows each, in
// the recorded folder and in a candidate), examples from the log as written (the first ones in log
// order). The test compares the command's JSON report with this.
import { readFileSync } from 'node:fs';
import type { Counts, FlipGroup, TargetCounts } from '../../src/replay/types.ts';
import { EXAMPLES_PER_GROUP } from '../../src/replay/types.ts';
import { admits, allowingRules, BUNDLES, type FolderName, type Input, type Request } from './replay-traffic.ts';

type Change = 'unchanged' | 'allow-to-deny' | 'deny-to-allow';

interface Decided {
  readonly tenant: string;
  readonly bundle: string | null;
  readonly input: Input;
  readonly change: Change;
  readonly ruleBefore: string | null;
  readonly ruleAfter: string | null;
}

/** One decision re-decided by `folder`: on the service's whole tenant (bundle null) or on an OPA bundle. */
function decide(folder: FolderName, tenant: string, bundle: string | null, input: Input, recordedAllow?: boolean): Decided {
  const before = allowingRules('live', tenant, input, bundle ?? undefined);
  const after = allowingRules(folder, tenant, input, bundle ?? undefined);
  const was = recordedAllow ?? before.length > 0;
  const now = after.length > 0;
  const change: Change = was === now ? 'unchanged' : was ? 'allow-to-deny' : 'deny-to-allow';
  // A flip has one rule on its allowing side (the folder's rules never overlap where a candidate changes them).
  if (change !== 'unchanged' && (was ? before : after).length !== 1) throw new Error(`the model is ambiguous for ${JSON.stringify(input)}`);
  return {
    tenant,
    bundle,
    input,
    change,
    // The service's log names the allowing rule; OPA's does not.
    ruleBefore: bundle === null && was ? (before[0] ?? null) : null,
    ruleAfter: now ? (after[0] ?? null) : null,
  };
}

const bundleOf = (r: Request): string | null => (r.route === 'everything' || r.route === 'documents' ? r.route : null);

const zero = (): { replayed: number; unchanged: number; allowToDeny: number; denyToAllow: number } => ({
  replayed: 0,
  unchanged: 0,
  allowToDeny: 0,
  denyToAllow: 0,
});
const add = (c: ReturnType<typeof zero>, change: Change): void => {
  c.replayed += 1;
  if (change === 'unchanged') c.unchanged += 1;
  else if (change === 'allow-to-deny') c.allowToDeny += 1;
  else c.denyToAllow += 1;
};

const groupKey = (d: Decided): string =>
  JSON.stringify([d.tenant, d.bundle, d.change, d.input.principal.type, d.input.action, d.input.resource.type, d.ruleBefore, d.ruleAfter]);

export interface Expected {
  readonly totals: Counts;
  readonly targets: TargetCounts[];
  /** Groups sorted by their key (the test sorts the report's the same way); examples: where and input. */
  readonly groups: FlipGroup[];
  /** What a real OPA decides on the candidate (--opa): each OPA line on its bundle, each acme service line on every bundle admitting it. */
  readonly opa: { decided: number; counts: Counts };
}

interface LogLine {
  readonly time: string;
  readonly tenant: string;
  readonly source: 'service' | 'opa';
  readonly bundle?: string;
  readonly path: string;
  readonly decision: string;
  readonly input: Input;
}

/** The expected report of replaying `logFile` (the lines of `requests`, in log order) against `folder`. */
export function expectedReport(folder: FolderName, requests: readonly Request[], logFile: string, where = logFile): Expected {
  const targets = new Map<string, ReturnType<typeof zero>>();
  const totals = zero();
  const groups = new Map<
    string,
    Omit<FlipGroup, 'examples'> & { count: number; examples: { where: string; time: string; input: unknown }[] }
  >();
  for (const r of requests) {
    const d = decide(folder, r.tenant, bundleOf(r), r.input);
    add(totals, d.change);
    const t = JSON.stringify([d.tenant, d.bundle]);
    const counts = targets.get(t) ?? zero();
    add(counts, d.change);
    targets.set(t, counts);
    if (d.change === 'unchanged') continue;
    const k = groupKey(d);
    const g = groups.get(k) ?? {
      tenant: d.tenant,
      bundle: d.bundle,
      change: d.change,
      subjectType: d.input.principal.type,
      action: d.input.action,
      resourceType: d.input.resource.type,
      ruleBefore: d.ruleBefore,
      ruleAfter: d.ruleAfter,
      count: 0,
      examples: [],
    };
    g.count += 1;
    groups.set(k, g);
  }
  // Examples and OPA's decisions: from the log as written, in its order.
  const opaCounts = zero();
  readFileSync(logFile, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      if (text === '') return;
      const l = JSON.parse(text) as LogLine;
      if (l.path !== 'acl/allow') return;
      const d = decide(folder, l.tenant, l.source === 'opa' ? (l.bundle ?? null) : null, l.input, l.decision === 'allow');
      const g = groups.get(groupKey(d));
      if (d.change !== 'unchanged' && g && g.examples.length < EXAMPLES_PER_GROUP)
        g.examples.push({ where: `${where}:${i + 1}`, time: l.time, input: l.input });
      const bundles = l.source === 'opa' ? [l.bundle as string] : l.tenant === 'acme' ? BUNDLES.filter((b) => admits(b, l.input)) : [];
      for (const b of bundles) add(opaCounts, decide(folder, l.tenant, b, l.input, l.decision === 'allow').change);
    });
  return {
    totals,
    targets: [...targets.entries()]
      .map(([k, counts]) => {
        const [tenant, bundle] = JSON.parse(k) as [string, string | null];
        return { tenant, bundle, counts };
      })
      .sort((a, b) => a.tenant.localeCompare(b.tenant) || (a.bundle ?? '').localeCompare(b.bundle ?? '')),
    groups: [...groups.values()].sort((a, b) => sortKey(a).localeCompare(sortKey(b))),
    opa: { decided: opaCounts.replayed, counts: opaCounts },
  };
}

/** A group's key from a report's group, to sort both sides alike. */
export const sortKey = (g: FlipGroup): string =>
  JSON.stringify([g.tenant, g.bundle, g.change, g.subjectType, g.action, g.resourceType, g.ruleBefore, g.ruleAfter]);
