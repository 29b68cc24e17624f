// The start every command that builds a manifests folder offline shares (lint, render, test): the
// folder checked, built as `serve` would build it, and refused when it holds no manifest file, each
// refusal worded once and exit status 2 in all three.
import { buildOffline, type Offline } from '../pipeline/index.ts';
import { folderProblem } from './folder.ts';

/** Why `dir` cannot be built at all (not a readable folder), or undefined. */
export async function folderRefusal(dir: string): Promise<string | undefined> {
  const notFolder = await folderProblem(dir);
  return notFolder === undefined ? undefined : `cannot read manifests from ${dir}: ${notFolder}`;
}

/**
 * The start of `lint` and `render`: `dir` given (else usage), then built; a refusal is printed on
 * stderr and its exit status (2) returned.
 */
export async function startOffline(
  command: string,
  dir: string | undefined,
  usage: string,
): Promise<(Offline & { readonly dir: string }) | number> {
  if (!dir) {
    process.stderr.write(`${command} needs --manifests <dir> (or ACL_MANIFESTS)\n\n${usage}`);
    return 2;
  }
  const built = await buildFolder(dir);
  if (!('refused' in built)) return { ...built, dir };
  process.stderr.write(`${built.refused}\n`);
  return 2;
}

/** The folder built, or why nothing was built (the message a command prints before exiting with 2). */
export async function buildFolder(dir: string): Promise<Offline | { readonly refused: string }> {
  const refused = await folderRefusal(dir);
  if (refused !== undefined) return { refused };
  const built = await buildOffline(dir);
  if ('unreadable' in built) return { refused: `cannot read manifests from ${dir}: ${built.unreadable}` };
  if (built.files.length === 0) return { refused: `no .yaml or .yml files in ${dir}` };
  return built;
}
