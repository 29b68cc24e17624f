// The Connectors page's actions: the FieldChanges of each (controller/actions.ts) written where the
// Connector lives (deps.editor), then a wait for the controller's publish, so the next page says what
// is true. Rotate and Generate answer with the new token, shown once in that answer and never again.
import { isObject } from '../../api/index.ts';
import { hashToken } from '../../auth/index.ts';
import { activeChanges, type FieldChange, generateChanges, revokeChanges, rotateChanges, tokenSecretName } from '../../controller/index.ts';
import { type Html, html } from '../html.ts';
import { notice } from '../layout.ts';
import { connectorsUrl } from '../paths.ts';
import type { PageAnswer, PageRequest } from '../routes.ts';
import { ACTION_TIMEOUT_MS, waitForPublish } from '../settle.ts';

export type ConnectorAction = 'activate' | 'deactivate' | 'rotate' | 'revoke' | 'generate';

export const CONFIRMATIONS: Readonly<Record<'deactivate' | 'rotate' | 'revoke', { title: string; button: string; consequence: string }>> = {
  deactivate: {
    title: 'Deactivate',
    button: 'Deactivate',
    consequence: 'Every OPA polling its bundles gets 403 until it is active again. The token stays valid.',
  },
  rotate: {
    title: 'Rotate the token',
    button: 'Rotate token',
    consequence:
      'A new token is issued and the current one stops working at once: every OPA still using it gets 401 until it has the new one.',
  },
  revoke: {
    title: 'Revoke the token',
    button: 'Revoke token',
    consequence: 'The token is removed: every OPA polling gets 401, and the connector is Inactive until a new token is generated.',
  },
};

function changesOf(action: ConnectorAction, obj: Parameters<typeof rotateChanges>[0]): FieldChange[] {
  switch (action) {
    case 'activate':
      return activeChanges(true);
    case 'deactivate':
      return activeChanges(false);
    case 'rotate':
      return rotateChanges(obj);
    case 'revoke':
      return revokeChanges();
    case 'generate':
      return generateChanges();
  }
}

/** The new token once the store serves it (the Secret holds it and its hash opens the connector). */
function servedToken(req: PageRequest, tenant: string, name: string, rotation: number | undefined): string | undefined {
  const secret = req.deps.readTokenSecret(tenant, name);
  if (secret?.token === undefined || (rotation !== undefined && secret.rotation !== rotation)) return undefined;
  const entry = req.deps.store.snapshot().tenants.get(tenant)?.connectors.get(name);
  return entry?.tokenHash === hashToken(secret.token) ? secret.token : undefined;
}

function tokenPage(tenant: string, name: string, token: string, where: string): PageAnswer {
  const body = html`<h1>New token for ${name}</h1>
    ${notice(
      'warn',
      html`<strong>Shown once.</strong> Copy it now: the console will not show it again. It is kept only in the Secret
        <code>${tokenSecretName(name)}</code> that OPA's <code>token_path</code> reads.`,
    )}
    <div class="token">
      <label for="new-token" class="sr-only">The new token of ${name}</label>
      <input id="new-token" type="text" readonly value="${token}" spellcheck="false" autocomplete="off" />
      <button type="button" class="primary" data-copy="new-token">Copy</button>
    </div>
    <p class="muted">Written to ${where}. The previous token no longer opens the bundles.</p>
    <p><a href="${connectorsUrl(tenant)}">Back to the connectors</a></p>`;
  return { kind: 'page', title: `New token for ${name}`, body, nav: 'connectors' };
}

function late(tenant: string, name: string, where: string): PageAnswer {
  const body: Html = html`<h1>Written, not applied yet</h1>
    ${notice('warn', html`The change to ${name} is written to ${where}, but the operator has not applied it within ${ACTION_TIMEOUT_MS / 1000} s. The connectors page shows it once it has; a new token is then in Secret <code>${tokenSecretName(name)}</code>.`)}
    <p><a href="${connectorsUrl(tenant)}">Back to the connectors</a></p>`;
  return { kind: 'page', title: 'Written, not applied yet', body, status: 202, nav: 'connectors' };
}

const DONE: Readonly<Record<'activate' | 'deactivate' | 'revoke', string>> = {
  activate: 'is Active: its bundles are served again',
  deactivate: 'is Inactive: its bundles answer 403',
  revoke: 'has no token: every poller gets 401, and the connector is Inactive',
};

export async function connectorAction(req: PageRequest, action: ConnectorAction): Promise<PageAnswer> {
  const tenant = req.tenant as string;
  const name = req.params['connector'] as string;
  const obj = req.deps.objects.get('Connector', tenant, name);
  if (!obj) return { kind: 'problem', status: 404, title: 'Not found', message: `There is no connector ${name} here.` };
  const spec = obj.raw['spec'];
  const revoked = isObject(spec) && spec['revoked'] === true;
  if ((action === 'activate' || action === 'rotate') && revoked)
    return {
      kind: 'problem',
      status: 409,
      title: 'Generate a token first',
      message: `Connector ${name} has no token (revoked): generate one first.`,
    };
  // Generate un-revokes: on a connector with a token it would change nothing and show the current token as new.
  if (action === 'generate' && !revoked)
    return { kind: 'problem', status: 409, title: 'It has a token', message: `Connector ${name} has a token: rotate it to get a new one.` };
  const changes = changesOf(action, obj);
  const outcome = await req.deps.editor.edit({ kind: 'Connector', namespace: tenant, name }, changes);
  if (!outcome.ok) return { kind: 'problem', status: outcome.status, title: 'Not changed', message: outcome.message };
  req.deps.log.info({ tenant, connector: name, action }, 'Console action written');
  const timeout = req.deps.actionTimeoutMs ?? ACTION_TIMEOUT_MS;
  const entry = () => req.deps.store.snapshot().tenants.get(tenant)?.connectors.get(name);
  if (action === 'rotate' || action === 'generate') {
    const rotation = action === 'rotate' ? (changes[0]?.value as number) : undefined;
    const ok = await waitForPublish(req.deps.store, () => servedToken(req, tenant, name, rotation) !== undefined, timeout);
    const token = ok ? servedToken(req, tenant, name, rotation) : undefined;
    return token === undefined ? late(tenant, name, outcome.where) : tokenPage(tenant, name, token, outcome.where);
  }
  const done = action === 'revoke' ? () => entry()?.tokenHash === undefined : () => entry()?.active === (action === 'activate');
  const ok = await waitForPublish(req.deps.store, done, timeout);
  return ok
    ? {
        kind: 'redirect',
        to: connectorsUrl(tenant),
        flash: { tone: 'ok', text: `Connector ${name} ${DONE[action]}. Written to ${outcome.where}.` },
      }
    : late(tenant, name, outcome.where);
}
