// The lint findings of what a folder build (or standalone's state folder) holds, for every command
// that shows them (lint, render, serve), each finding with its manifest file.
import { type Finding, type LintKind, type LintObject, lintObjects } from '../lint/index.ts';
import type { ObjectState } from '../standalone/index.ts';

const LINTED: ReadonlySet<string> = new Set<LintKind>(['Rule', 'Connector', 'Bundle', 'Directory']);

/** The findings of these objects, the manifest file (relative to the manifests folder) as their source. */
export function findingsOf(objects: readonly ObjectState[]): Finding[] {
  const linted = objects.flatMap((o): LintObject[] =>
    LINTED.has(o.kind) ? [{ kind: o.kind as LintKind, namespace: o.namespace, name: o.name, raw: o.raw, source: o.source }] : [],
  );
  return lintObjects(linted);
}

/** "2 lint finding(s)", as render counts its problems. */
export function countFindings(n: number): string {
  return `${n} lint finding(s)`;
}
