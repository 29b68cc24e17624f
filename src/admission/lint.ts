// The webhook's warnings: the lint findings about the object admitted, computed over its tenant as
// the operator holds it (with the incoming object in place of its stored version).
import { type Finding, lintObjects } from '../lint/index.ts';
import type { WarningsFor } from './verdict.ts';

/** One warning line: the code first (what docs/testing.md lists), then what is wrong and the fix. */
function warningOf(f: Finding): string {
  return `${f.code}: ${f.message}. Fix: ${f.hint}.`;
}

/** Lint findings of `object` among `objects` (which hold it), one line each. */
export const lintWarnings: WarningsFor = (object, objects) =>
  lintObjects(objects)
    .filter((f) => f.kind === object.kind && f.namespace === object.namespace && f.name === object.name)
    .map(warningOf);
