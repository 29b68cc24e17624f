// A real OPA deciding the cases on the bundles their tenant would serve: one `opa eval` per bundle for
// all of its cases, on the very archive `serve` would serve (opa/ runs it).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { entityTypesTake } from '../bundle/index.ts';
import { opaAllows, type Opa } from '../opa/index.ts';
import type { DecisionInput } from '../policy/index.ts';
import type { ResolvedCase } from './cases.ts';
import type { OpaDecision } from './run.ts';
import type { TenantWorld, World, WorldBundle } from './world.ts';

/** Bundles evaluated at the same time (each is one OPA process). */
const PARALLEL = 2;

/** Whether a bundle's entityTypes filter lets its rules decide the case: no filter, or it names the principal's or resource's type. */
export function admits(bundle: WorldBundle, input: DecisionInput): boolean {
  const typeOf = (v: unknown): string => (typeof v === 'string' ? v : '');
  return entityTypesTake(new Set(bundle.entityTypes), typeOf(input.principal['type']), typeOf(input.resource['type']));
}

/** The bundles OPA decides a case on: those it names, else every bundle of its tenant that admits it. */
export function bundlesFor(c: ResolvedCase, tenant: TenantWorld): WorldBundle[] {
  if (c.bundles !== undefined) return c.bundles.flatMap((b) => tenant.bundles.get(b) ?? []);
  return [...tenant.bundles.values()].filter((b) => admits(b, c.input));
}

/** OPA's decisions for every case (in order; [] for a case no bundle admits), or why OPA could not decide them. */
export async function decideWithOpa(opa: Opa, cases: readonly ResolvedCase[], world: World): Promise<OpaDecision[][] | string> {
  const decisions: OpaDecision[][] = cases.map(() => []);
  const work = new Map<WorldBundle, number[]>();
  cases.forEach((c, i) => {
    const tenant = world.get(c.tenant);
    for (const b of tenant ? bundlesFor(c, tenant) : []) {
      const list = work.get(b) ?? [];
      list.push(i);
      work.set(b, list);
    }
  });
  const dir = await mkdtemp(join(tmpdir(), 'acl-test-opa-'));
  try {
    const queue = [...work.entries()];
    let failed: string | undefined;
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next !== undefined && failed === undefined; next = queue.shift()) {
        const [bundle, indexes] = next;
        const label = `${bundle.tenant}/${bundle.name}`;
        const archive = join(dir, `${encodeURIComponent(bundle.tenant)}.${encodeURIComponent(bundle.name)}.tar.gz`);
        await writeFile(archive, bundle.bytes);
        const allows = await opaAllows(
          opa,
          archive,
          indexes.map((i) => (cases[i] as ResolvedCase).input),
          label,
        );
        if (typeof allows === 'string') failed ??= allows;
        else for (const [k, i] of indexes.entries()) decisions[i]?.push({ bundle: label, decision: allows[k] ? 'allow' : 'deny' });
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    if (failed !== undefined) return failed;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // Bundles were run in parallel: each case lists its bundles in name order.
  for (const d of decisions) d.sort((a, b) => (a.bundle < b.bundle ? -1 : a.bundle > b.bundle ? 1 : 0));
  return decisions;
}
