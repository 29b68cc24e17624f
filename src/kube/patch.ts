// The console's actions in Kubernetes mode: a JSON merge patch (RFC 7386) of the object's spec
// fields or annotations, so kubectl and GitOps tools see the change where they look; the informer
// then delivers it to the controllers like any other edit. RBAC: patch on connectors and rules
// (deploy/20-rbac.yaml says which action needs which).
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { GROUP, VERSION } from '../api/index.ts';
import { changesProblem, type EditOutcome, keyText, type ObjectEditor, type ObjectKey, withChanges } from '../controller/index.ts';
import { describeError, PLURALS, statusOf, type KubeClients } from './client.ts';

/** The API server's own sentence, without the HTTP status describeError puts in front. */
function apiMessage(err: unknown): string {
  return describeError(err).replace(/^HTTP \d+: /, '');
}

/** `Connector acme/gateway (kubectl -n acme get connector gateway -o yaml)` */
function whereOf(key: ObjectKey): string {
  return `${key.kind} ${key.namespace}/${key.name} (kubectl -n ${key.namespace} get ${key.kind.toLowerCase()} ${key.name} -o yaml)`;
}

/** An ObjectEditor that merge-patches custom objects through the API server. */
export function createObjectPatcher(clients: KubeClients, log: Logger): ObjectEditor {
  return {
    async edit(key, changes) {
      const problem = changesProblem(changes);
      if (problem) return { ok: false, status: 422, message: `${keyText(key)} was not changed: ${problem}.` };
      if (key.kind === 'Secret')
        return { ok: false, status: 422, message: `${keyText(key)} is a Secret; actions change only custom objects.` };
      const plural = PLURALS[key.kind];
      try {
        await clients.custom.patchNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace: key.namespace, plural, name: key.name, body: withChanges({}, changes) },
          // client-node sends its first listed type (JSON Patch) unless told otherwise.
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (err) {
        return failed(key, plural, err, log);
      }
      log.info({ kind: key.kind, key: keyText(key), fields: changes.map((c) => c.path.join('.')) }, 'Patched object for a console action');
      return { ok: true, where: whereOf(key) };
    },
  };
}

/** What a refused or failed patch tells the person who asked for it. */
function failed(key: ObjectKey, plural: string, err: unknown, log: Logger): EditOutcome {
  const status = statusOf(err);
  log.warn({ kind: key.kind, key: keyText(key), err: describeError(err) }, 'Could not patch object for a console action');
  const id = `${key.kind} ${key.namespace}/${key.name}`;
  switch (status) {
    case 404:
      return { ok: false, status: 404, message: `${id} no longer exists.` };
    case 409:
      return { ok: false, status: 409, message: `${id} was changed by someone else at the same moment: ${apiMessage(err)}. Try again.` };
    case 400:
    case 422:
      return { ok: false, status: 422, message: `The API server refused the change to ${id}: ${apiMessage(err)}.` };
    case 403:
      return {
        ok: false,
        status: 500,
        message: `The operator may not patch ${plural}: its RBAC lacks the patch verb (apply the current deploy/20-rbac.yaml, or deploy/namespaced/ with --namespaces).`,
      };
    default:
      return { ok: false, status: 500, message: `The API server did not take the change to ${id}: ${apiMessage(err)}.` };
  }
}
