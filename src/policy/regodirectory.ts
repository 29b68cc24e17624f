// The directory section of a policy: the data a bundle's rules read of the tenant's entity directory,
// and principal and resource merged from the input and that data. Printed in parts and in steps,
// kept per directory object and the properties read, and each bucket's lines per bucket.
import type { Json, RuleModel } from './model.ts';
import { codePointSorted, directoryBuckets, neededProperties, readKeys, type EntityDirectory } from './directory.ts';
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
  for (const type of codePointSorted(needed.keys())) {
    const keys = needed.get(type) as Set<string> | 'all';
    const keysKey = keys === 'all' ? 'all' : [...keys].sort().join('\u0000');
    const texts = yield* typeTexts(directory, type, keys, keysKey);
    if (texts.length > 0)
      typeParts.push(
        `${typeParts.length > 0 ? ',\n' : ''}\t${regoString(type)}: {\n`,
        // Separators are parts of their own: a bucket's text in a concatenation would be copied when flattened.
        ...texts.flatMap((t, i) => (i > 0 ? [',\n', t] : [t])),
        '\n\t}',
      );
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
 * The lines of one type's entities, one text per bucket of the directory that has any (buckets in
 * order, ids in code point order within each): a bucket's text is kept with the bucket's map, which
 * a Directory edit of other entities leaves as it was, so an edit prints one bucket's lines.
 */
function* typeTexts(
  directory: EntityDirectory,
  type: string,
  keys: ReadonlySet<string> | 'all',
  keysKey: string,
): Generator<void, string[]> {
  const buckets = directoryBuckets(directory, type) ?? [];
  const texts: string[] = [];
  for (const bucket of buckets) {
    const cached = BUCKET_TEXTS.get(bucket);
    let text = cached?.keys === keysKey ? cached.text : undefined;
    if (text === undefined) {
      const lines: string[] = [];
      let n = 0;
      for (const id of codePointSorted(bucket.keys())) {
        const props = bucket.get(id) as JsonMap;
        const names = readKeys(props, keys);
        if (names.length > 0) lines.push(`\t\t${regoString(id)}: ${regoJson(new Map(names.map((k) => [k, props[k] as Json])))}`);
        if (++n % 512 === 0) yield;
      }
      text = lines.length === 0 ? null : lines.join(',\n');
      BUCKET_TEXTS.set(bucket, { keys: keysKey, text });
      yield;
    }
    if (text !== null) texts.push(text);
  }
  return texts;
}

/** Each bucket's lines in the directory section, by the bucket's map and the properties read (null: none). */
const BUCKET_TEXTS = new WeakMap<ReadonlyMap<string, JsonMap>, { readonly keys: string; readonly text: string | null }>();
/** Directory sections already printed, by directory and the properties read (directories are immutable). */
const SECTIONS = new WeakMap<EntityDirectory, Map<string, (readonly string[])[]>>();
