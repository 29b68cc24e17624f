// The state folder of offline commands: the StateFolder the folder source and the controllers
// write to (objects with their generations and status, token Secrets, problems, activity), held in
// memory only, so an offline build runs the pipeline `serve` runs and writes nothing to disk.
import { join } from 'node:path';
import { type Kind, keyText, type TokenSecret } from '../controller/index.ts';
import type { RecentDecision } from '../fleet/index.ts';
import type { DocumentProblem, ObjectState, StateFolder } from '../standalone/index.ts';
import type { SyncRecord } from '../store/index.ts';

const keyOf = (kind: Kind, namespace: string, name: string): string => keyText({ kind, namespace, name });

/** An empty state folder in memory; token files are named as they would be, never written. */
export function createMemoryFolder(): StateFolder {
  const objects = new Map<string, ObjectState>();
  const secrets = new Map<string, TokenSecret>();
  const activity = new Map<string, { namespace: string; bundle: string; records: SyncRecord[] }>();
  const agents = new Map<string, Record<string, unknown>>();
  const decisions = new Map<string, { namespace: string; bundle: string; decisions: RecentDecision[] }>();
  let problems: DocumentProblem[] = [];
  let adminKey = '';
  return {
    dir: '',
    load: async () => undefined,
    removeStaleTemporaryFiles: async () => [],
    object: (kind, namespace, name) => objects.get(keyOf(kind, namespace, name)),
    objects: () => [...objects.values()],
    async saveObject(s) {
      objects.set(keyOf(s.kind, s.namespace, s.name), s);
    },
    async saveStatus(kind, namespace, name, status) {
      const s = objects.get(keyOf(kind, namespace, name));
      if (s) objects.set(keyOf(kind, namespace, name), { ...s, status });
    },
    async removeObject(kind, namespace, name) {
      objects.delete(keyOf(kind, namespace, name));
    },
    tokenSecret: (namespace, connector) => secrets.get(`${namespace}/${connector}`),
    async writeTokenSecret(owner, secret) {
      secrets.set(`${owner.metadata.namespace}/${owner.metadata.name}`, secret);
    },
    async deleteTokenSecret(namespace, connector) {
      secrets.delete(`${namespace}/${connector}`);
    },
    tokenFile: (namespace, connector) => join('tokens', namespace, connector),
    async ensureConsoleAdminKey(newKey) {
      adminKey ||= newKey();
      return 'console-admin-key';
    },
    consoleAdminKey: async () => adminKey,
    repairTokens: async () => [],
    async writeProblems(next) {
      problems = [...next];
    },
    problems: async () => [...problems],
    async writeActivity(namespace, bundle, records) {
      activity.set(`${namespace}/${bundle}`, { namespace, bundle, records: [...records] });
    },
    activity: async () => [...activity.values()],
    async writeAgents(namespace, bundle, doc) {
      if (doc === undefined) agents.delete(`${namespace}/${bundle}`);
      else agents.set(`${namespace}/${bundle}`, { ...doc });
    },
    agents: async (namespace, bundle) => agents.get(`${namespace}/${bundle}`),
    async clearAgents() {
      agents.clear();
    },
    async writeDecisions(namespace, bundle, recent) {
      if (recent === undefined) decisions.delete(`${namespace}/${bundle}`);
      else decisions.set(`${namespace}/${bundle}`, { namespace, bundle, decisions: [...recent] });
    },
    decisions: async () => [...decisions.values()],
  };
}
