// One run of test files against an offline build: read every file, stop at the first file errors
// (all of them, positioned), else decide every case natively and, when an OPA is given, on the
// bundles, and say it all as a TestReport.
import type { Offline } from '../pipeline/index.ts';
import { resolveCases, type ResolvedCase } from './cases.ts';
import type { Opa } from '../opa/index.ts';
import { decideWithOpa } from './by-opa.ts';
import type { TestReport } from './report.ts';
import { decideNatively, withOpaDecisions } from './run.ts';
import { readTestFile } from './pieces.ts';
import type { FileError } from './source.ts';
import { worldOf } from './world.ts';

export interface TestText {
  /** The file as the report names it. */
  readonly file: string;
  readonly text: string;
}

export interface SuiteOptions {
  /** The manifests folder as the report names it. */
  readonly manifests: string;
  readonly opa?: Opa | undefined;
  readonly notes?: readonly string[];
}

export type SuiteOutcome =
  | { readonly ok: true; readonly report: TestReport }
  /** The test files hold errors: nothing was decided. */
  | { readonly ok: false; readonly errors: readonly FileError[] }
  /** OPA could not decide (it failed, or answered nonsense). */
  | { readonly ok: false; readonly opaFailure: string };

/** Runs the test files against what the offline build would serve. */
export async function runSuite(offline: Offline, texts: readonly TestText[], options: SuiteOptions): Promise<SuiteOutcome> {
  const started = performance.now();
  const world = worldOf(offline);
  const cases: ResolvedCase[] = [];
  const errors: FileError[] = [];
  for (const { file, text } of texts) {
    const source = readTestFile(file, text);
    if (Array.isArray(source)) {
      errors.push(...source);
      continue;
    }
    const resolved = resolveCases(source, world, options.manifests);
    errors.push(...resolved.errors);
    cases.push(...resolved.cases);
  }
  if (errors.length > 0) return { ok: false, errors };
  let results = decideNatively(cases, world);
  if (options.opa !== undefined) {
    const decisions = await decideWithOpa(options.opa, cases, world);
    if (typeof decisions === 'string') return { ok: false, opaFailure: decisions };
    results = withOpaDecisions(results, decisions, options.opa.version);
  }
  return {
    ok: true,
    report: {
      manifests: options.manifests,
      files: texts.map((t) => t.file),
      results,
      opa: options.opa,
      notes: options.notes ?? [],
      seconds: (performance.now() - started) / 1000,
    },
  };
}
