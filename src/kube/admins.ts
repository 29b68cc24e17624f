// The console's admin keys in Kubernetes mode: Secrets labelled acl.policyagent.dev/console-admin:
// "true" in the operator's namespace, key `token`. Listed by sign-ins at most once per 5 s (the console
// keeps the last list that long), so a key added or deleted with kubectl counts within 5 s; only their
// SHA-256 leaves this function.
import { hashToken } from '../auth/index.ts';
import { secretToken } from '../controller/index.ts';
import { describeError, type KubeClients } from './client.ts';

const LABEL_CONSOLE_ADMIN = 'acl.policyagent.dev/console-admin';
/** Shorter admin keys are ignored, as short API keys are. */
const MIN_ADMIN_KEY_LENGTH = 16;

export async function adminKeyHashes(clients: KubeClients, namespace: string): Promise<ReadonlySet<string>> {
  let list: Awaited<ReturnType<KubeClients['core']['listNamespacedSecret']>>;
  try {
    list = await clients.core.listNamespacedSecret({ namespace, labelSelector: `${LABEL_CONSOLE_ADMIN}=true` });
  } catch (err) {
    throw new Error(`cannot list the Secrets labelled ${LABEL_CONSOLE_ADMIN}=true in namespace ${namespace}: ${describeError(err)}`);
  }
  const hashes = new Set<string>();
  for (const s of list.items) {
    const token = secretToken({ data: s.data });
    if (token !== undefined && token.length >= MIN_ADMIN_KEY_LENGTH) hashes.add(hashToken(token));
  }
  return hashes;
}
