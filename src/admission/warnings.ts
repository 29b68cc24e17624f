// The webhook's warnings: the lint findings about the object admitted, computed over its tenant as
// the operator holds it (with the incoming object in place of its stored version).
import { findingText, lintObjects } from '../lint/index.ts';
import type { WarningsFor } from './verdict.ts';

/** Lint findings of `object` among `objects` (which hold it), one line each. */
export const lintWarnings: WarningsFor = (object, objects) =>
  lintObjects(objects)
    .filter((f) => f.kind === object.kind && f.namespace === object.namespace && f.name === object.name)
    .map((f) => `${findingText(f)}.`);
