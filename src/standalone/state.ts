// The state folder of standalone mode: what the API server would hold in a cluster, as
// Kubernetes-shaped YAML, so tokens, generations, revisions and ETags survive a restart.
//   objects/<ns>/<kind>/<name>.yaml   the object with metadata.generation, spec and status (state-objects.ts)
//   secrets/<ns>/<connector>-token.yaml   the connector's token Secret (v1) (state-tokens.ts)
//   tokens/<ns>/<connector>           the bare token (mode 0600), for OPA's token_path (state-tokens.ts)
//   activity/<ns>/<bundle>.yaml       sync activity, newest first (state-records.ts, like the three below)
//   agents/<ns>/<bundle>.json         the OPA agents that report on the bundle, and its rollout
//   decisions/<ns>/<bundle>.json      the newest decisions OPA reported (mode 0600: inputs)
//   problems.yaml                     documents of the manifests folder that could not be used
// This file puts them together behind one StateFolder.
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Kind, SourceObject, TokenSecret } from '../controller/index.ts';
import type { RecentDecision } from '../fleet/index.ts';
import type { SyncRecord } from '../store/index.ts';
import { createSerial, removeStaleTemporaryFiles } from './files.ts';
import type { DocumentProblem } from './objects.ts';
import * as stored from './state-objects.ts';
import * as records from './state-records.ts';
import * as tokens from './state-tokens.ts';

export type { ObjectState } from './state-objects.ts';

export interface StateFolder {
  readonly dir: string;
  load(): Promise<void>;
  /**
   * Removes temporary files that a process killed mid-write left (serve, before it writes anything;
   * never a command that only reads). Returns their names, relative to the folder.
   */
  removeStaleTemporaryFiles(): Promise<string[]>;
  object(kind: Kind, namespace: string, name: string): stored.ObjectState | undefined;
  objects(): readonly stored.ObjectState[];
  saveObject(state: stored.ObjectState): Promise<void>;
  saveStatus(kind: Kind, namespace: string, name: string, status: Readonly<Record<string, unknown>>): Promise<void>;
  removeObject(kind: Kind, namespace: string, name: string): Promise<void>;
  tokenSecret(namespace: string, connector: string): TokenSecret | undefined;
  writeTokenSecret(owner: SourceObject, secret: TokenSecret): Promise<void>;
  deleteTokenSecret(namespace: string, connector: string): Promise<void>;
  tokenFile(namespace: string, connector: string): string;
  /**
   * The console's admin key file (`console-admin-key`, mode 0600), made with `newKey()` when missing and
   * never overwritten; read again by sign-ins (at most once per 5 s), so replacing its content changes the key.
   */
  ensureConsoleAdminKey(newKey: () => string): Promise<string>;
  consoleAdminKey(): Promise<string>;
  /**
   * Puts back, from memory, a token file or token Secret file that disappeared (or changed) while
   * running, so OPA's token_path and the next start keep the issued token. Returns the files written.
   */
  repairTokens(): Promise<string[]>;
  writeProblems(problems: readonly DocumentProblem[]): Promise<void>;
  problems(): Promise<DocumentProblem[]>;
  writeActivity(namespace: string, bundle: string, records: readonly SyncRecord[]): Promise<void>;
  activity(): Promise<{ namespace: string; bundle: string; records: SyncRecord[] }[]>;
  /** The agents of a bundle (GET .../agents's document); undefined removes the file. */
  writeAgents(namespace: string, bundle: string, doc: Readonly<Record<string, unknown>> | undefined): Promise<void>;
  agents(namespace: string, bundle: string): Promise<Record<string, unknown> | undefined>;
  /** Removes every agents file: agents live in memory, and a restarted service has heard from none yet. */
  clearAgents(): Promise<void>;
  writeDecisions(namespace: string, bundle: string, decisions: readonly RecentDecision[] | undefined): Promise<void>;
  /** The recent decisions kept per bundle; a file that cannot be read is passed to `onUnreadable` and skipped, the others still read. */
  decisions(
    onUnreadable?: (file: string, message: string) => void,
  ): Promise<{ namespace: string; bundle: string; decisions: RecentDecision[] }[]>;
}

const CONSOLE_ADMIN_KEY = 'console-admin-key';

/** A secret file made once (exclusive create, 0600): an existing one, whatever it holds, is the person's. */
async function ensureKeyFile(path: string, newKey: () => string): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  try {
    await writeFile(path, `${newKey()}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  await chmod(path, 0o600);
  return path;
}

/** The state folder at `dir` (nothing is read until load()). */
export function openStateFolder(dir: string): StateFolder {
  const files = { dir, serial: createSerial() };
  const objects: stored.ObjectFiles = { ...files, objects: new Map() };
  const secrets: tokens.TokenFiles = { ...files, secrets: new Map(), secretTexts: new Map() };
  return {
    dir,
    async load() {
      await mkdir(dir, { recursive: true });
      await stored.loadObjects(objects);
      await tokens.loadTokenSecrets(secrets);
    },
    removeStaleTemporaryFiles: () => removeStaleTemporaryFiles(dir),
    object: (kind, namespace, name) => objects.objects.get(stored.stateKey(kind, namespace, name)),
    objects: () => [...objects.objects.values()],
    saveObject: (s) => stored.saveObject(objects, s),
    saveStatus: (kind, namespace, name, status) => stored.saveStatus(objects, kind, namespace, name, status),
    removeObject: (kind, namespace, name) => stored.removeObject(objects, kind, namespace, name),
    ensureConsoleAdminKey: (newKey) => ensureKeyFile(join(dir, CONSOLE_ADMIN_KEY), newKey),
    consoleAdminKey: async () => (await readFile(join(dir, CONSOLE_ADMIN_KEY), 'utf8')).trim(),
    tokenSecret: (namespace, connector) => secrets.secrets.get(`${namespace}/${connector}`),
    writeTokenSecret: (owner, secret) => tokens.writeTokenSecret(secrets, owner, secret),
    deleteTokenSecret: (namespace, connector) => tokens.deleteTokenSecret(secrets, namespace, connector),
    tokenFile: (namespace, connector) => tokens.tokenFile(dir, namespace, connector),
    repairTokens: () => tokens.repairTokens(secrets),
    writeProblems: (problems) => records.writeProblems(files, problems),
    problems: () => records.readProblems(dir),
    writeActivity: (namespace, bundle, activity) => records.writeActivity(files, namespace, bundle, activity),
    writeAgents: (namespace, bundle, doc) => records.writeAgents(files, namespace, bundle, doc),
    agents: (namespace, bundle) => records.readAgents(dir, namespace, bundle),
    async clearAgents() {
      await rm(join(dir, 'agents'), { recursive: true, force: true });
    },
    writeDecisions: (namespace, bundle, decisions) => records.writeDecisions(files, namespace, bundle, decisions),
    decisions: (onUnreadable) => records.readDecisions(dir, onUnreadable),
    activity: () => records.readActivity(dir),
  };
}
