// The tenant's entity directory kept up to date edit by edit (the store's update, the Rego section
// kept per bucket) against a whole rebuild from the Directories as they are: the same directory,
// the same policy.rego text, the same decisions, over long seeded runs of edits across Directories
// (entities added, removed, changed, listed by two Directories at once, whole Directories removed).
import { describe, expect, it } from 'vitest';
import {
  buildDirectory,
  buildIndex,
  compileRule,
  decide,
  toDecisionInput,
  translate,
  type DirectoryEntity,
  type EntityDirectory,
  type RegoVersion,
} from '../src/policy/index.ts';
import { createStore } from '../src/store/index.ts';
import { rng } from './support/corpus.ts';
import { ruleModelFor } from './support/rules.ts';

const RULES = [
  ruleModelFor('same-team', { condition: 'principal.team == resource.team' }),
  ruleModelFor('admins', { condition: 'principal.role == "admin"', actions: ['delete'] }),
  ruleModelFor('groups', { subjectType: 'group', condition: 'size(principal) > 3' }),
];
const INDEX = buildIndex('acme', RULES.map(compileRule));

function view(d: EntityDirectory): unknown {
  return { size: d.size, types: d.types(), entities: d.types().map((t) => d.ids(t).map((id) => [id, d.get(t, id)])) };
}

describe('the entity directory, edit after edit', () => {
  it.each([1, 2, 3])('equals a whole rebuild in entities, policy.rego and decisions, over 150 edits (seed %i)', (seed) => {
    const next = rng(seed);
    const int = (n: number): number => Math.floor(next() * n);
    const store = createStore();
    const lists = new Map<string, DirectoryEntity[]>();
    const entity = (): DirectoryEntity => {
      const type = int(6) === 0 ? 'group' : int(8) === 0 ? 'doc' : 'user';
      const props: Record<string, unknown> = { team: `t${int(4)}`, email: `e${int(9)}` };
      if (int(3) === 0) props['role'] = int(2) ? 'admin' : 'member';
      if (int(5) === 0) props['n'] = int(3);
      return { type, id: `${type[0]}${int(1500)}`, properties: props as DirectoryEntity['properties'] };
    };
    const unique = (es: DirectoryEntity[]): DirectoryEntity[] => [...new Map(es.map((e) => [`${e.type}/${e.id}`, e])).values()];
    for (let round = 0; round < 150; round++) {
      const name = `dir-${int(6)}`;
      const was = lists.get(name) ?? [];
      const r = next();
      let now: DirectoryEntity[] | undefined;
      if (r < 0.05)
        now = undefined; // the Directory removed
      else if (r < 0.15 || was.length === 0) now = unique(Array.from({ length: 30 + int(200) }, entity));
      else {
        // A few entities changed, added or removed: what a person edits in a file.
        now = [...was];
        for (let k = 1 + int(4); k > 0; k--) {
          const i = int(now.length);
          const e = now[i] as DirectoryEntity;
          const p = next();
          if (p < 0.5) now[i] = { ...e, properties: { ...e.properties, team: `t${int(4)}` } };
          else if (p < 0.7) now.splice(i, 1);
          else now.push(entity());
        }
        now = unique(now);
      }
      if (now) lists.set(name, now);
      else lists.delete(name);
      store.draft.setDirectoryEntities('acme', name, now);
      if (int(4) !== 0) store.publish();
      const kept = store.draft.directory('acme');
      const whole = buildDirectory([...lists.keys()].sort().flatMap((n) => lists.get(n) ?? []));
      expect(view(kept)).toEqual(view(whole));
      const v = (round % 2) as RegoVersion;
      expect(translate(RULES, { regoVersion: v, directory: kept })).toBe(translate(RULES, { regoVersion: v, directory: whole }));
      for (let q = 0; q < 20; q++) {
        const type = int(4) === 0 ? 'group' : 'user';
        const doc = {
          principal: { type, id: `${type[0]}${int(1500)}` },
          action: int(2) ? 'read' : 'delete',
          resource: { type: 'doc', id: `d${int(1500)}`, team: `t${int(4)}` },
        };
        const input = toDecisionInput(doc);
        if (typeof input === 'string') throw new Error(input);
        expect(decide(INDEX, input, kept).allow).toBe(decide(INDEX, input, whole).allow);
      }
    }
  });
});
