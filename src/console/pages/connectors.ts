// Settings > Connectors (service spec 3.2, 3.3): each connector's state, token (issued, rotation,
// revoked), bundles and agents, and its actions: Active on/off, Rotate, Revoke (each destructive one
// confirmed on a page of its own, so it works without JavaScript), Generate after a revoke. A new
// token is shown once, in the answer to the action, and never again. Actions are admin-only (app.ts).
import { tokenSecretName } from '../../controller/index.ts';
import { gitOpsBanner, phaseBadge, problemOf } from '../facts.ts';
import { type Html, html } from '../html.ts';
import { badge, notice, when } from '../layout.ts';
import { bundleUrl, tenantUrl } from '../paths.ts';
import type { ConsoleRoute, PageAnswer, PageRequest } from '../routes.ts';
import { listViewed, type Viewed } from '../view.ts';
import { connectorAction, type ConnectorAction, CONFIRMATIONS } from './connector-actions.ts';

function actionForm(
  req: PageRequest,
  connector: string,
  action: ConnectorAction | 'confirm',
  label: string,
  extra?: Record<string, string>,
  tone = '',
): Html {
  const path = action === 'confirm' ? 'confirm' : action;
  return html`<form method="post" action="${tenantUrl(req.tenant as string, 'connectors', connector, path)}" class="inline">
    <input type="hidden" name="_csrf" value="${req.csrf}" />
    ${Object.entries(extra ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}
    <button type="submit" class="${tone}">${label}</button>
  </form>`;
}

function actions(req: PageRequest, c: Viewed<'Connector'>): Html {
  if (req.principal.kind !== 'admin')
    return html`<p class="muted">Actions need the console's admin key; a tenant's API key reads only.</p>`;
  if (!c.spec) return html`<p class="muted">Fix the spec first: actions change a valid Connector only.</p>`;
  const spec = c.spec;
  return html`<div class="actions" role="group" aria-label="Actions on ${c.name}">
    ${spec.active ? actionForm(req, c.name, 'confirm', 'Deactivate', { action: 'deactivate' }) : spec.revoked ? '' : actionForm(req, c.name, 'activate', 'Activate', undefined, 'primary')}
    ${spec.revoked ? actionForm(req, c.name, 'generate', 'Generate token', undefined, 'primary') : actionForm(req, c.name, 'confirm', 'Rotate token', { action: 'rotate' })}
    ${spec.revoked ? '' : actionForm(req, c.name, 'confirm', 'Revoke token', { action: 'revoke' }, 'danger')}
  </div>`;
}

function agentsLine(req: PageRequest, c: Viewed<'Connector'>): Html {
  const t = req.snapshot.tenants.get(c.namespace);
  const bundles = [...(t?.bundles.values() ?? [])].filter((b) => b.connector === c.name);
  if (bundles.length === 0) return html`<span class="muted">no bundle uses this connector</span>`;
  return html`<ul class="plain">${bundles.map((b) => {
    const s = req.deps.agents.summary(c.namespace, b.name, b.built.revision, req.nowMs);
    return html`<li><a href="${bundleUrl(c.namespace, b.name)}">${b.name}</a> <span class="muted">revision ${b.built.revision}, agents ${s.current}/${s.reporting} current${s.failing > 0 ? `, ${s.failing} failing` : ''}</span></li>`;
  })}</ul>`;
}

function card(req: PageRequest, c: Viewed<'Connector'>): Html {
  const problem = problemOf(c.status.conditions);
  const spec = c.spec;
  return html`<section class="card" id="connector-${c.name}" aria-labelledby="connector-${c.name}-h">
    <h2 id="connector-${c.name}-h">${c.name} ${phaseBadge(c.status.phase)} ${spec?.displayName ? html`<span class="muted">${spec.displayName}</span>` : ''}</h2>
    ${gitOpsBanner(c.object, req.deps.mode)}
    ${problem ? notice('bad', html`<strong>${problem.reason ?? 'Not ready'}</strong>: ${problem.message ?? ''}`) : ''}
    <dl class="facts">
      <dt>State</dt><dd>${spec ? (spec.active ? badge('Active', 'ok') : badge('Inactive: bundles answer 403', 'warn')) : ''}</dd>
      <dt>Token</dt><dd>${spec?.revoked ? badge('Revoked: every poller gets 401', 'bad') : html`issued ${when(c.status.tokenIssuedAt, req.nowMs)}`}</dd>
      <dt>Rotation</dt><dd>${spec ? String(spec.tokenRotation) : ''}</dd>
      <dt>Token Secret</dt><dd><code>${c.status.tokenSecretName ?? tokenSecretName(c.name)}</code></dd>
      <dt>Bundles</dt><dd>${agentsLine(req, c)}</dd>
    </dl>
    ${actions(req, c)}
  </section>`;
}

function connectorsPage(req: PageRequest): PageAnswer {
  const tenant = req.tenant as string;
  const list = listViewed(req.deps.objects, 'Connector', tenant);
  const body = html`<h1>Connectors of ${tenant}</h1>
    <p class="muted">A connector's token opens its bundles at <code>/${tenant}/connectors/policyagent/&lt;connector&gt;/bundles/&lt;bundle&gt;</code>.
      ${req.deps.mode === 'kubernetes' ? 'Actions patch the Connector object, as kubectl would.' : 'Actions edit the manifest file that holds the Connector; the folder stays the source of truth.'}</p>
    <div id="connectors-live" data-live>
      ${list.length === 0 ? html`<p class="empty">Tenant ${tenant} has no Connector.</p>` : list.map((c) => card(req, c))}
    </div>`;
  return { kind: 'page', title: `Connectors of ${tenant}`, body, nav: 'connectors' };
}

/** The confirmation page of a destructive action (Deactivate, Rotate, Revoke). */
function confirmPage(req: PageRequest): PageAnswer {
  const tenant = req.tenant as string;
  const name = req.params['connector'] as string;
  const action = req.form?.get('action');
  const what = action === 'deactivate' || action === 'rotate' || action === 'revoke' ? CONFIRMATIONS[action] : undefined;
  if (!what) return { kind: 'problem', status: 400, title: 'Unknown action', message: 'Choose Deactivate, Rotate token or Revoke token.' };
  if (!req.deps.objects.get('Connector', tenant, name))
    return { kind: 'problem', status: 404, title: 'Not found', message: `There is no connector ${name} here.` };
  const body = html`<h1>${what.title}: ${name}?</h1>
    ${notice('warn', what.consequence)}
    <div class="actions">
      ${actionForm(req, name, action as ConnectorAction, what.button, undefined, action === 'revoke' ? 'danger' : 'primary')}
      <a class="button" href="${tenantUrl(tenant, 'connectors')}">Cancel</a>
    </div>`;
  return { kind: 'page', title: `${what.title}: ${name}`, body, nav: 'connectors' };
}

export const CONNECTOR_ROUTES: readonly ConsoleRoute[] = [
  { method: 'GET', path: '/t/:tenant/connectors', handle: connectorsPage },
  { method: 'POST', path: '/t/:tenant/connectors/:connector/confirm', action: true, handle: confirmPage },
  ...(['activate', 'deactivate', 'rotate', 'revoke', 'generate'] as const).map(
    (action): ConsoleRoute => ({
      method: 'POST',
      path: `/t/:tenant/connectors/:connector/${action}`,
      action: true,
      handle: (req) => connectorAction(req, action),
    }),
  ),
];
