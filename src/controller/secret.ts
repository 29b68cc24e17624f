// Secrets labelled acl.policyagent.dev/api-key: "true" hold the API keys of the decision endpoint;
// the tenant is the Secret's namespace.
import { hashToken } from '../auth/index.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { keyText, LABEL_API_KEY, type ObjectKey } from './types.ts';

/** Shorter keys are refused: a guessable API key is worse than none. */
export const MIN_API_KEY_LENGTH = 16;

/** The `token` of a Secret: `data` (base64) as Kubernetes stores it. */
export function secretToken(raw: Readonly<Record<string, unknown>>): string | undefined {
  const data = raw['data'];
  if (typeof data !== 'object' || data === null) return undefined;
  const encoded = (data as Record<string, unknown>)['token'];
  if (typeof encoded !== 'string') return undefined;
  return Buffer.from(encoded, 'base64').toString('utf8').trim();
}

export function reconcileSecret(key: ObjectKey, deps: ReconcileDeps): Outcome {
  const obj = deps.objects.get('Secret', key.namespace, key.name);
  if (obj?.metadata.labels?.[LABEL_API_KEY] !== 'true') {
    deps.draft.setApiKey(key.namespace, key.name, undefined);
    return {};
  }
  const token = secretToken(obj.raw);
  if (token === undefined || token.length < MIN_API_KEY_LENGTH) {
    deps.log.warn({ kind: 'Secret', key: keyText(key), minLength: MIN_API_KEY_LENGTH }, 'Ignored API key Secret without a usable token');
    deps.draft.setApiKey(key.namespace, key.name, undefined);
    return {};
  }
  const hash = hashToken(token);
  deps.draft.setApiKey(key.namespace, key.name, hash);
  const tenants = new Set(deps.draft.apiKeyHolders(hash).map((h) => h.tenant));
  if (tenants.size > 1) {
    deps.log.warn(
      { kind: 'Secret', key: keyText(key), holders: deps.draft.apiKeyHolders(hash).map((h) => `${h.tenant}/${h.secret}`) },
      'Refused an API key that Secrets of several tenants hold: it opens none of them',
    );
  }
  return {};
}
