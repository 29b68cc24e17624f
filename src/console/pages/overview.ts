// Overview (every tenant the principal sees: objects by phase, problems, rollouts in progress) and a
// tenant's page (its rules, bundles, connectors and directories at a glance). Pure renderers.
import type { Condition } from '../../api/index.ts';
import { conditionOf, phaseBadge, problemOf, warningOf } from '../facts.ts';
import { type Html, html } from '../html.ts';
import { badge, firstOf, table, when } from '../layout.ts';
import { bundleUrl, connectorsUrl, directoryUrl, ruleUrl, tenantUrl } from '../paths.ts';
import type { ConsoleRoute, PageAnswer, PageRequest } from '../routes.ts';
import { listViewed, type Viewed, type ViewKind } from '../view.ts';

interface Problem {
  readonly tenant: string;
  readonly kind: ViewKind;
  readonly name: string;
  readonly condition: Condition;
}

const KINDS: readonly ViewKind[] = ['Rule', 'Connector', 'Bundle', 'Directory'];

function hrefOf(p: { tenant: string; kind: ViewKind; name: string }) {
  if (p.kind === 'Rule') return ruleUrl(p.tenant, p.name);
  if (p.kind === 'Bundle') return bundleUrl(p.tenant, p.name);
  if (p.kind === 'Connector') return connectorsUrl(p.tenant);
  return directoryUrl(p.tenant);
}

function problemsOf(req: PageRequest, tenant: string): { problems: Problem[]; warnings: Problem[] } {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  for (const kind of KINDS) {
    for (const o of listViewed(req.deps.objects, kind, tenant)) {
      const p = problemOf(o.status.conditions);
      if (p) problems.push({ tenant, kind, name: o.name, condition: p });
      const w = warningOf(o.status.conditions);
      if (w) warnings.push({ tenant, kind, name: o.name, condition: w });
    }
  }
  return { problems, warnings };
}

/** Bundles whose agents are not all on the revision served (RolledOut not True while agents report). */
function rollouts(req: PageRequest, tenant: string) {
  return listViewed(req.deps.objects, 'Bundle', tenant).filter((b) => {
    const agents = b.status.agents;
    return agents !== undefined && agents.reporting > 0 && conditionOf(b.status.conditions, 'RolledOut')?.status !== 'True';
  });
}

function counts(values: readonly (string | undefined)[]): Html {
  const by = new Map<string, number>();
  for (const v of values) by.set(v ?? 'Unknown', (by.get(v ?? 'Unknown') ?? 0) + 1);
  if (by.size === 0) return html`<span class="muted">none</span>`;
  return html`${[...by.entries()].sort().map(([phase, n]) => html`<span class="stat-chip">${n} ${phaseBadge(phase)}</span> `)}`;
}

function problemRows(list: readonly Problem[]): Html[] {
  return firstOf(list, 'rows').items.map(
    (p) => html`<tr>
      <td>${p.tenant}</td><td>${p.kind}</td><td><a href="${hrefOf(p)}">${p.name}</a></td>
      <td>${p.condition.reason ?? ''}</td><td>${p.condition.message ?? ''}</td>
    </tr>`,
  );
}

function tenantCard(req: PageRequest, tenant: string): Html {
  const { objects } = req.deps;
  const rules = listViewed(objects, 'Rule', tenant);
  const connectors = listViewed(objects, 'Connector', tenant);
  const bundles = listViewed(objects, 'Bundle', tenant);
  return html`<section class="card" aria-labelledby="tenant-${tenant}">
    <h2 id="tenant-${tenant}"><a href="${tenantUrl(tenant)}">${tenant}</a></h2>
    <dl class="facts">
      <dt>Rules</dt><dd>${counts(rules.map((r) => r.status.phase))}</dd>
      <dt>Connectors</dt><dd>${counts(connectors.map((c) => c.status.phase))}</dd>
      <dt>Bundles</dt><dd>${counts(bundles.map((b) => b.status.phase))}</dd>
    </dl>
    <p><a href="${connectorsUrl(tenant)}">Connectors</a> · <a href="${directoryUrl(tenant)}">Directory</a></p>
  </section>`;
}

function overview(req: PageRequest): PageAnswer {
  const tenants = req.tenants;
  const all = tenants.map((t) => problemsOf(req, t));
  const problems = all.flatMap((a) => a.problems);
  const warnings = all.flatMap((a) => a.warnings);
  const inProgress = tenants.flatMap((t) => rollouts(req, t).map((b) => ({ tenant: t, b })));
  const body = html`<h1>Overview</h1>
    <div id="overview-live" data-live>
      <div class="grid">${tenants.map((t) => tenantCard(req, t))}</div>
      ${tenants.length === 0 ? html`<p class="empty">No tenant has any Rule, Connector, Bundle or Directory yet.</p>` : ''}
      <h2>Problems</h2>
      ${firstOf(problems, 'problems').note}
      ${table('Problems', ['Tenant', 'Kind', 'Name', 'Reason', 'Message'], problemRows(problems), 'Nothing is failing: every object is Ready.')}
      <h2>Rollouts in progress</h2>
      ${table(
        'Rollouts in progress',
        ['Tenant', 'Bundle', 'Revision', 'Agents current', 'Why'],
        firstOf(inProgress, 'rollouts').items.map(
          ({ tenant, b }) => html`<tr>
            <td>${tenant}</td><td><a href="${bundleUrl(tenant, b.name)}">${b.name}</a></td>
            <td class="num">${b.status.revision ?? ''}</td><td class="num">${b.status.agents?.rollout ?? ''}</td>
            <td>${conditionOf(b.status.conditions, 'RolledOut')?.message ?? ''}</td>
          </tr>`,
        ),
        'No rollout in progress: every reporting agent runs the revision served.',
      )}
      <h2>Lint findings</h2>
      ${firstOf(warnings, 'lint findings').note}
      ${table('Lint findings', ['Tenant', 'Kind', 'Name', 'Code', 'Finding'], problemRows(warnings), 'No lint findings.')}
    </div>`;
  return { kind: 'page', title: 'Overview', body, nav: 'overview' };
}

/** Whether a rule matches the tenant page's filter: its name, phase, types or actions contain the text. */
function matches(r: Viewed<'Rule'>, q: string): boolean {
  if (q === '') return true;
  const text = [r.name, r.status.phase ?? '', r.spec?.subjectType ?? '', r.spec?.resourceType ?? '', ...(r.spec?.actions ?? [])].join(' ');
  return text.toLowerCase().includes(q);
}

function rulesTable(req: PageRequest, tenant: string): Html {
  const q = (req.query.get('q') ?? '').trim().toLowerCase();
  const all = listViewed(req.deps.objects, 'Rule', tenant);
  const found = all.filter((r) => matches(r, q));
  const first = firstOf(found, q === '' ? 'rules: narrow them with the filter' : 'matching rules');
  const rows = first.items.map((r) => {
    const t = r.status.translation;
    const w = warningOf(r.status.conditions);
    return html`<tr>
      <td><a href="${ruleUrl(tenant, r.name)}">${r.name}</a></td>
      <td>${phaseBadge(r.status.phase)}</td>
      <td>${r.spec ? html`<code>${r.spec.subjectType}</code> ${r.spec.actions.join(', ')} <code>${r.spec.resourceType}</code>` : html`<span class="muted">invalid spec</span>`}</td>
      <td>${t ? phaseBadge(t.status) : ''}</td>
      <td>${w ? badge(w.reason ?? 'Warning', 'warn') : ''}</td>
    </tr>`;
  });
  const count = q === '' ? '' : html`<p class="muted">${found.length} of ${all.length} rules match.</p>`;
  return html`${count}${first.note}${table('Rules', ['Rule', 'Phase', 'Subject · actions · resource', 'Translation', 'Lint'], rows, q === '' ? 'No rules.' : 'No rule matches the filter.')}`;
}

function bundleRows(req: PageRequest, tenant: string): Html[] {
  return listViewed(req.deps.objects, 'Bundle', tenant).map((b) => {
    const lastSync = req.deps.store.activity.lastSync(`${tenant}/${b.name}`) ?? b.status.lastSync;
    return html`<tr>
      <td><a href="${bundleUrl(tenant, b.name)}">${b.name}</a></td>
      <td>${phaseBadge(b.status.phase)}</td>
      <td>${b.spec?.connector ?? ''}</td>
      <td class="num">${b.status.revision ?? ''}</td>
      <td class="num">${b.status.ruleCount ?? ''}</td>
      <td class="num">${b.status.agents?.rollout ?? '0/0'}</td>
      <td>${when(lastSync, req.nowMs)}</td>
    </tr>`;
  });
}

function tenantPage(req: PageRequest): PageAnswer {
  const tenant = req.tenant as string;
  const { problems, warnings } = problemsOf(req, tenant);
  const connectors = listViewed(req.deps.objects, 'Connector', tenant);
  const body = html`<h1>Tenant ${tenant}</h1>
    <div id="tenant-live" data-live>
      ${problems.length + warnings.length > 0 ? html`<h2>Problems and findings</h2>${firstOf([...problems, ...warnings], 'problems and findings').note}${table('Problems and findings', ['Tenant', 'Kind', 'Name', 'Reason', 'Message'], problemRows([...problems, ...warnings]), '')}` : ''}
      <h2>Bundles</h2>
      ${table('Bundles', ['Bundle', 'Phase', 'Connector', 'Revision', 'Rules', 'Agents', 'Last sync'], bundleRows(req, tenant), 'No bundles.')}
      <h2>Connectors</h2>
      <p>${connectors.map((c) => html`<span class="stat-chip">${c.name} ${phaseBadge(c.status.phase)}</span> `)} <a href="${connectorsUrl(tenant)}">Manage connectors</a></p>
    </div>
    <h2 id="rules">Rules</h2>
    <form method="get" action="${tenantUrl(tenant)}" class="filters" role="search" aria-label="Filter the rules">
      <div><label for="rule-filter">Find rules</label>
        <input id="rule-filter" name="q" type="search" value="${req.query.get('q') ?? ''}" placeholder="name, phase, type or action" /></div>
      <button type="submit">Filter</button>
    </form>
    <div id="tenant-rules-live" data-live>${rulesTable(req, tenant)}</div>`;
  return { kind: 'page', title: `Tenant ${tenant}`, body, nav: 'tenant' };
}

export const OVERVIEW_ROUTES: readonly ConsoleRoute[] = [
  { method: 'GET', path: '/', handle: overview },
  { method: 'GET', path: '/t/:tenant', handle: tenantPage },
];
