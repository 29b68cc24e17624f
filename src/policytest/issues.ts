// A schema's rejection of a test file, said as a person fixes it: at the key or value concerned, with
// the case's name, the keys allowed where an unknown one was found, and the closest of them.
import type { z } from 'zod';
import { isObject } from '../api/index.ts';
import { KEYS } from './schema.ts';
import type { FileError, Path, SourceFile } from './source.ts';

type Issue = z.core.$ZodIssue;

function valueAt(root: unknown, path: Path): unknown {
  let v = root;
  for (const part of path) {
    if (Array.isArray(v) && typeof part === 'number') v = v[part];
    else if (isObject(v)) v = v[String(part)];
    else return undefined;
  }
  return v;
}

/** What a value is, in words: "a list", "the text "x"", ... */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (isObject(v)) return 'a mapping';
  if (typeof v === 'string') return `the text ${JSON.stringify(v)}`;
  return `the ${typeof v} ${String(v)}`;
}

/** Edit distance, for suggestions between short keys. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/** The closest of `known` to `word`, when it is close enough to be what was meant. */
export function closest(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = k.startsWith(word) || word.startsWith(k) ? 1 : distance(word.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(1, Math.ceil(word.length / 3)) ? best : undefined;
}

/** Which object a path leads into, for the keys it allows. */
function objectAt(path: Path): { what: string; keys: readonly string[] } {
  const last = path[path.length - 1];
  if (path.length === 0) return { what: 'a test file', keys: KEYS.file };
  if (last === 'input') return { what: 'input', keys: KEYS.input };
  if (path.length === 1 && last === 'defaults') return { what: 'defaults', keys: KEYS.defaults };
  return { what: 'a case', keys: KEYS.case };
}

/** `case "name": ` (or `case 3: `) for a path inside a case; empty elsewhere. */
export function casePrefix(root: unknown, path: Path): string {
  if (path[0] !== 'cases' || typeof path[1] !== 'number') return '';
  const name = valueAt(root, ['cases', path[1], 'name']);
  return typeof name === 'string' && name !== '' ? `case ${JSON.stringify(name)}: ` : `case ${path[1] + 1}: `;
}

/** The path as a person reads it inside its case (or file): `resource.id`, `defaults.subject`. */
function shortPath(path: Path): string {
  const inCase = path[0] === 'cases' && typeof path[1] === 'number' ? path.slice(2) : path;
  return inCase.map(String).join('.');
}

const MISSING_HINT: Record<string, string> = {
  expect: ': allow or deny',
  name: ': every case has a name, unique in its file',
  cases: ': the list of cases (docs/testing.md#test-files)',
};

function typeMessage(issue: Issue, root: unknown, prefix: string): { path: Path; message: string } {
  const path = issue.path as Path;
  const found = valueAt(root, path);
  if (path.length === 0) {
    return { path, message: `a test file is a mapping with ${KEYS.file.join(', ')}; this file holds ${describeValue(found)}` };
  }
  if (path.length === 2 && path[0] === 'cases') {
    return { path, message: `${prefix}a case is a mapping with name, expect and a request; found ${describeValue(found)}` };
  }
  const expected = 'expected' in issue ? issue.expected : '';
  const wanted = expected === 'object' || expected === 'record' ? 'a mapping' : expected === 'array' ? 'a list' : `a ${expected}`;
  return { path, message: `${prefix}${shortPath(path)} must be ${wanted}, not ${describeValue(found)}` };
}

/** One message per problem, at the position it concerns. */
function describeIssue(issue: Issue, root: unknown): { path: Path; at: 'key' | 'value'; message: string }[] {
  const path = issue.path as Path;
  const prefix = casePrefix(root, path);
  const last = path[path.length - 1];
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_value') && path.length > 0 && valueAt(root, path) === undefined) {
    return [
      { path: path.slice(0, -1), at: 'value', message: `${prefix}${JSON.stringify(last)} is missing${MISSING_HINT[String(last)] ?? ''}` },
    ];
  }
  switch (issue.code) {
    case 'unrecognized_keys': {
      const { what, keys } = objectAt(path);
      return issue.keys.map((key) => {
        const near = closest(key, keys);
        return {
          path: [...path, key],
          at: 'key' as const,
          message: `${prefix}unknown key ${JSON.stringify(key)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}; ${what} has ${keys.join(', ')}`,
        };
      });
    }
    case 'invalid_type':
      return [{ ...typeMessage(issue, root, prefix), at: 'value' }];
    case 'invalid_value':
      return [
        {
          path,
          at: 'value',
          message: `${prefix}${shortPath(path)} must be ${issue.values.join(' or ')}, not ${describeValue(valueAt(root, path))}`,
        },
      ];
    case 'too_small': {
      const message =
        path.length === 1 && path[0] === 'cases'
          ? '"cases" is empty: a test file needs at least one case'
          : `${prefix}${shortPath(path)} must not be empty`;
      return [{ path, at: 'value', message }];
    }
    case 'invalid_key':
      // Only entities: has names as keys; YAML reads a key written null, ~ or not at all as "", as in a manifest.
      return [
        {
          path,
          at: 'key',
          message: `${prefix}${shortPath(path.slice(0, -1))}: a name is missing or null: write the name, in quotes if it is the text "null" or "~"`,
        },
      ];
    case 'invalid_union':
      return [
        {
          path,
          at: 'value',
          message: `${prefix}${shortPath(path)} must be a name or a list of names, not ${describeValue(valueAt(root, path))}`,
        },
      ];
    default:
      return [{ path, at: 'value', message: `${prefix}${shortPath(path) || 'the file'}: ${issue.message}` }];
  }
}

/** Every issue of a schema's rejection, positioned in the file, in file order. */
export function issueErrors(source: SourceFile, issues: readonly Issue[]): FileError[] {
  return issues
    .flatMap((issue) => describeIssue(issue, source.value))
    .map(({ path, at, message }) => ({ file: source.file, ...source.position(path, at), message }))
    .sort((a, b) => a.line - b.line || a.column - b.column);
}
