// The directory section of a policy: the data a bundle's rules read of the tenant's entity directory,
// and principal and resource merged from the input and that data. Printed in parts and in steps,
// and kept per directory object and the properties read.
import type { Json, RuleModel } from './model.ts';
import { codePointSorted, neededProperties, readKeys, type EntityDirectory } from './directory.ts';
import { block, regoJson, regoString, type RegoVersion } from './regotext.ts';
import type { JsonMap } from './values.ts';

/**
 * The directory section: the data the rules read, and principal and resource merged from the input
 * and that data (the input's keys win). Empty when the rules read nothing the directory has.
 * Kept per directory object and the properties read, so a rule edit that reads nothing new does
 * not print a large directory again.
 */
export function* directorySection(
  rules: readonly RuleModel[],
  directory: EntityDirectory,
  v: RegoVersion,
): Generator<void, (readonly string[])[]> {
  if (directory.size === 0) return [];
  const needed = neededProperties(rules);
  const signature = `${v}|${JSON.stringify([...needed].map(([t, k]) => [t, k === 'all' ? 'all' : [...k].sort()]).sort())}`;
  let byNeed = SECTIONS.get(directory);
  const known = byNeed?.get(signature);
  if (known) return known;
  // The section as parts: a 500,000-entity directory is 15 MB of text, never one string on this thread.
  const typeParts: string[] = [];
  let n = 0;
  for (const type of codePointSorted(needed.keys())) {
    const keys = needed.get(type) as Set<string> | 'all';
    const keysKey = keys === 'all' ? 'all' : [...keys].sort().join('\u0000');
    const lines: string[] = [];
    for (const id of directory.ids(type)) {
      if (++n % 512 === 0) yield;
      const props = directory.get(type, id) as JsonMap;
      // An entity's line is kept with its properties object, which a Directory edit elsewhere leaves as it was.
      const cached = ENTITY_LINES.get(props);
      let line = cached && cached.id === id && cached.keys === keysKey ? cached.line : undefined;
      if (line === undefined) {
        const names = readKeys(props, keys);
        line = names.length === 0 ? null : `\t\t${regoString(id)}: ${regoJson(new Map(names.map((k) => [k, props[k] as Json])))}`;
        ENTITY_LINES.set(props, { id, keys: keysKey, line });
      }
      if (line !== null) lines.push(line);
    }
    if (lines.length > 0)
      typeParts.push(`${typeParts.length > 0 ? ',\n' : ''}\t${regoString(type)}: {\n`, ...(yield* groupSteps(lines, ',\n')), '\n\t}');
    yield;
  }
  if (typeParts.length === 0) return [];
  const eq = v === 1 ? ':=' : '=';
  const merge = (root: 'principal' | 'resource'): string[] => [
    block(v, `acl_${root}[k] = x`, [`x := input.${root}[k]`]),
    block(v, `acl_${root}[k] = x`, [`x := acl_directory[input.${root}.type][input.${root}.id][k]`, `not acl_has_key(input.${root}, k)`]),
  ];
  const section = [
    [
      `# Entity directory: the properties these rules read of the entities listed by Directory resources.\nacl_directory ${eq} {\n`,
      ...typeParts,
      '\n}',
    ],
    [
      [
        "# principal and resource as the rules read them: the request's attributes, and for a known entity",
        '# its directory properties under them (a key the request gives wins, whole).',
        ...merge('principal'),
        ...merge('resource'),
        block(v, 'acl_has_key(o, k)', ['_ = o[k]']),
      ].join('\n'),
    ],
  ];
  if (!byNeed) {
    byNeed = new Map();
    SECTIONS.set(directory, byNeed);
  }
  byNeed.set(signature, section);
  return section;
}

/**
 * lines.join(separator) as parts of 4,096 lines each (the separator between parts included), with a
 * yield between them: 500,000 lines take 30 ms to join at once.
 */
function* groupSteps(lines: readonly string[], separator: string): Generator<void, string[]> {
  const groups: string[] = [];
  for (let i = 0; i < lines.length; i += 4096) {
    groups.push(`${i > 0 ? separator : ''}${lines.slice(i, i + 4096).join(separator)}`);
    yield;
  }
  return groups;
}

/** Each entity's line in the directory section, by its properties object (null: nothing read). */
const ENTITY_LINES = new WeakMap<JsonMap, { readonly id: string; readonly keys: string; readonly line: string | null }>();

/** Directory sections already printed, by directory and the properties read (directories are immutable). */
const SECTIONS = new WeakMap<EntityDirectory, Map<string, (readonly string[])[]>>();
