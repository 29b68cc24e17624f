// A bundle's detail page (docs/console.md, "Bundle"): what it serves (revision, digest, ETag, entity
// filter, Rego version, connector, the rules it carries), its phase and conditions, the sync activity
// of service spec 2.5 with filters, the OPA agents running it with RolledOut, the key each verifies
// with and KeyRotated, and the newest decisions they reported. The route gathers; renderBundle is a
// pure function of what it gathered. Only kids are shown: no private key ever reaches a page.
import { z } from 'zod';
import type { Condition } from '../../api/index.ts';
import { agentsReport, type RecentDecision } from '../../fleet/index.ts';
import { bundleKey, type BundleEntry, type SyncRecord } from '../../store/index.ts';
import { phaseBadge } from '../facts.ts';
import { type Html, html } from '../html.ts';
import { badge, firstOf, notice, table, when } from '../layout.ts';
import { bundleUrl, connectorsUrl, ruleUrl } from '../paths.ts';
import { type ConsoleRoute, notFound, type PageAnswer, type PageRequest } from '../routes.ts';
import { getViewed, type Viewed } from '../view.ts';
import { activitySection, type ParsedActivityFilter, parseActivityFilter, utcTime } from './activity.ts';

type AgentsReport = ReturnType<typeof agentsReport>;

/** Everything the bundle page shows, gathered at one instant. */
export interface BundleView {
  readonly tenant: string;
  readonly name: string;
  /** The Bundle object as the source holds it (undefined: gone from the source, still served). */
  readonly bundle: Viewed<'Bundle'> | undefined;
  /** What is served now (undefined: nothing yet, or the bundle is invalid and never built). */
  readonly entry: BundleEntry | undefined;
  /** Newest first. */
  readonly activity: readonly SyncRecord[];
  readonly filter: ParsedActivityFilter;
  /** The agents against the served revision (undefined: no revision served). */
  readonly agents: AgentsReport | undefined;
  /** Newest first. */
  readonly decisions: readonly RecentDecision[];
  readonly nowMs: number;
}

/** The entity filter the served bundle was built with (JSON of a string list), when it parses as one. */
function servedEntityTypes(entry: BundleEntry | undefined): readonly string[] | undefined {
  if (!entry) return undefined;
  const parsed: unknown = JSON.parse(entry.source.entityTypes);
  return Array.isArray(parsed) && parsed.every((x) => typeof x === 'string') ? parsed : undefined;
}

function entityFilter(v: BundleView): Html {
  const types = v.bundle?.spec?.entityTypes ?? servedEntityTypes(v.entry) ?? [];
  if (types.length === 0) return html`all rules <span class="muted">(no entityTypes filter)</span>`;
  return html`rules whose subject or resource type is ${types.map((t, i) => html`${i > 0 ? ', ' : ''}<code>${t}</code>`)}`;
}

/** status.signingKey as the bundle reconcile records it (the kid signing the revision served), read at the edge. */
const SignedBy = z.object({ signingKey: z.string().regex(/^[\x21-\x7e]{1,128}$/) });

/** The kid that signs what is served; `unsigned` with --unsigned-bundles; undefined when status names neither. */
function signedBy(v: BundleView): string | undefined {
  const parsed = SignedBy.safeParse(v.bundle?.object.raw['status']);
  if (parsed.success) return parsed.data.signingKey;
  return conditionIn(v, 'KeyRotated')?.reason === 'Unsigned' ? 'unsigned' : undefined;
}

function conditionIn(v: BundleView, type: string): Condition | undefined {
  return v.bundle?.status.conditions?.find((c) => c.type === type);
}

function factsSection(v: BundleView): Html {
  const signer = signedBy(v);
  const status = v.bundle?.status ?? {};
  const built = v.entry?.built;
  const connector = v.bundle?.spec?.connector ?? v.entry?.connector;
  const regoVersion = v.bundle?.spec?.regoVersion ?? v.entry?.source.regoVersion;
  const lastSync = v.activity.find((r) => r.status === 200 || r.status === 304)?.time ?? status.lastSync;
  return html`<dl class="facts">
    <dt>Phase</dt><dd>${phaseBadge(status.phase)}</dd>
    <dt>Revision</dt><dd>${built?.revision ?? status.revision ?? html`<span class="muted">none served yet</span>`}</dd>
    <dt>Digest</dt><dd><code>${built?.digest ?? status.digest ?? ''}</code></dd>
    <dt>ETag</dt><dd><code>${built?.etag ?? status.etag ?? ''}</code></dd>
    <dt>Entity filter</dt><dd>${entityFilter(v)}</dd>
    <dt>Rego version</dt><dd>${regoVersion === undefined ? '' : `v${regoVersion}`}</dd>
    <dt>Connector</dt><dd>${connector === undefined ? '' : html`<a href="${connectorsUrl(v.tenant)}">${connector}</a>`}</dd>
    <dt>Last sync</dt><dd>${when(lastSync, v.nowMs)}</dd>
    ${signer === undefined ? '' : html`<dt>Signed by</dt><dd>${signer === 'unsigned' ? html`<span class="muted">unsigned (--unsigned-bundles)</span>` : html`<code>${signer}</code>`}</dd>`}
  </dl>`;
}

function conditionBadge(c: Condition): Html {
  return badge(c.status, c.status === 'True' ? (c.type === 'Warning' ? 'warn' : 'ok') : c.status === 'False' ? 'bad' : 'muted');
}

function conditionsTable(conditions: readonly Condition[], nowMs: number): Html {
  const rows = conditions.map(
    (c) => html`<tr>
      <th scope="row">${c.type}</th><td>${conditionBadge(c)}</td><td>${c.reason ?? ''}</td>
      <td>${c.message ?? ''}</td><td>${when(c.lastTransitionTime, nowMs)}</td>
    </tr>`,
  );
  return table('Conditions', ['Type', 'Status', 'Reason', 'Message', 'Since'], rows, 'No conditions written yet.');
}

function rulesSection(v: BundleView): Html {
  if (!v.entry) return html`<p class="empty">Nothing is served yet, so it carries no rules.</p>`;
  const first = firstOf(v.entry.source.rules, 'rules carried');
  const rows = first.items.map(
    (r) => html`<tr>
      <td><a href="${ruleUrl(v.tenant, r.name)}">${r.name}</a></td>
      <td><code>${r.subjectType}</code></td><td>${r.actions.join(', ')}</td><td><code>${r.resourceType}</code></td>
      <td>${r.conditionText === undefined ? html`<span class="muted">always</span>` : html`<code>${r.conditionText}</code>`}</td>
    </tr>`,
  );
  return html`${first.note}${table(
    'Rules carried',
    ['Rule', 'Subject', 'Actions', 'Resource', 'Condition'],
    rows,
    'It carries no rule: no Enforced rule matches its entity filter, so it denies everything.',
  )}`;
}

const AGENT_TONE = { current: 'ok', behind: 'warn', failing: 'bad' } as const;
const STATUS_TONE = { True: 'ok', False: 'bad', Unknown: 'muted' } as const;

/** KeyRotated as the Bundle's status records it, and the agents counted by the key they verify with. */
function keysLine(v: BundleView, r: AgentsReport): Html {
  const c = conditionIn(v, 'KeyRotated');
  const counts = r.signingKeys.map(
    (k) =>
      html`<span class="stat-chip">${k.kid === null ? html`<span class="muted">no label</span>` : html`<code>${k.kid}</code>`} ${k.agents}</span>`,
  );
  return html`<p>
      ${c ? html`KeyRotated ${badge(c.status, STATUS_TONE[c.status])} <span class="muted">${c.reason ?? ''}</span>` : ''}
      ${counts.length > 0 ? html` · verify with ${counts}` : ''}
    </p>
    ${c?.message ? html`<p>${c.message}</p>` : ''}`;
}

function agentsSection(v: BundleView): Html {
  const r = v.agents;
  if (!r) return html`<p class="empty">No revision is served yet: no agent can run it.</p>`;
  const rows = r.list.map(
    (a) => html`<tr>
      <td><code>${a.id}</code></td><td>${badge(a.state, AGENT_TONE[a.state])}</td><td>${a.version ?? ''}</td>
      <td><code>${a.clientIp}</code></td><td class="num">${a.activeRevision ?? html`<span class="muted">none</span>`}</td>
      <td>${when(a.lastReport, v.nowMs)}</td>
      <td>${a.signingKey === null ? html`<span class="muted">no label</span>` : html`<code>${a.signingKey}</code>`}</td>
      <td>${a.error ? html`<code>${a.httpCode ?? a.error.code}</code> ${a.error.message}` : ''}${a.alsoLoads ? html` also loads ${a.alsoLoads.join(', ')}` : ''}</td>
    </tr>`,
  );
  const s = r.agents;
  return html`<p>
      <span class="stat-chip">${s.rollout} current</span> · ${s.behind} behind · ${s.failing} failing ·
      RolledOut ${badge(r.rolledOut.status, r.rolledOut.status === 'True' ? 'ok' : r.rolledOut.status === 'False' ? 'bad' : 'muted')}
      <span class="muted">${r.rolledOut.reason}</span>
    </p>
    <p>${r.rolledOut.message}</p>
    ${keysLine(v, r)}
    ${table(
      'Agents',
      ['Agent', 'State', 'Version', 'Client IP', 'Active revision', 'Last report', 'Verifies with', 'Error'],
      rows,
      `No OPA has reported its status for this bundle in the last ${r.expirySeconds} s.`,
    )}`;
}

const DECISION_TONE = { allow: 'ok', deny: 'bad', error: 'warn', undefined: 'muted', other: 'info' } as const;
/** Decisions rendered (each input up to 4 KB): the rest are a link away, in the API's decisions route. */
export const DECISIONS_SHOWN = 25;

function decisionsSection(v: BundleView): Html {
  const rows = v.decisions.slice(0, DECISIONS_SHOWN).map(
    (d) => html`<tr>
      <td>${utcTime(d.time)}</td><td><code>${d.agent}</code></td><td>${badge(d.decision, DECISION_TONE[d.decision])}</td>
      <td><code>${d.path ?? ''}</code></td><td class="num">${d.revision ?? ''}</td>
      <td><details><summary>input</summary><pre>${JSON.stringify(d.input) ?? 'none'}</pre></details></td>
    </tr>`,
  );
  const more =
    v.decisions.length > DECISIONS_SHOWN
      ? html`<p class="muted">The newest ${DECISIONS_SHOWN} of the ${v.decisions.length} kept; <code>acl-operator status --bundle</code> and
          <code>GET …/bundles/${v.name}/decisions</code> list them all.</p>`
      : '';
  return html`${more}${table(
    'Recent decisions',
    ['Time', 'Agent', 'Decision', 'Path', 'Revision', 'Input'],
    rows,
    'No decisions reported: OPA sends them when its decision_logs plugin points at this service (docs/opa.md).',
  )}`;
}

/** The bundle page's body. Pure: the same view gives the same HTML. */
export function renderBundle(v: BundleView): Html {
  const conditions = v.bundle?.status.conditions ?? [];
  return html`<h1>Bundle ${v.name} <span class="muted">in ${v.tenant}</span></h1>
    ${v.bundle ? '' : notice('warn', 'This Bundle is gone from the source; the last build is still shown.')}
    <div id="bundle-facts" data-live>
      ${factsSection(v)}
      <h2>Conditions</h2>
      ${conditionsTable(conditions, v.nowMs)}
    </div>
    <h2>Rules carried</h2>
    <div id="bundle-rules" data-live>${rulesSection(v)}</div>
    ${activitySection(v.activity, v.filter, bundleUrl(v.tenant, v.name))}
    <h2>Agents</h2>
    <div id="bundle-agents" data-live>${agentsSection(v)}</div>
    <h2>Recent decisions</h2>
    <div id="bundle-decisions" data-live>${decisionsSection(v)}</div>`;
}

/** What the page shows of bundle `name`, read now from the store, the source and the fleet. */
export function gatherBundle(req: PageRequest, tenant: string, name: string): BundleView | undefined {
  const bundle = getViewed(req.deps.objects, 'Bundle', tenant, name);
  const entry = req.snapshot.tenants.get(tenant)?.bundles.get(name);
  if (!bundle && !entry) return undefined;
  const key = bundleKey(tenant, name);
  const revision = entry?.built.revision;
  const connector = entry?.connector ?? bundle?.spec?.connector ?? '';
  return {
    tenant,
    name,
    bundle,
    entry,
    activity: req.deps.store.activity.list(key),
    filter: parseActivityFilter(req.query),
    agents: revision === undefined ? undefined : agentsReport(req.deps.agents, { tenant, connector, bundle: name, revision }, req.nowMs),
    decisions: req.deps.recent.list(key),
    nowMs: req.nowMs,
  };
}

function bundlePage(req: PageRequest): PageAnswer {
  const tenant = req.tenant as string;
  const name = req.params['bundle'] ?? '';
  const view = gatherBundle(req, tenant, name);
  if (!view) return notFound(`bundle ${name} in tenant ${tenant}`);
  return { kind: 'page', title: `Bundle ${name}`, body: renderBundle(view), nav: 'bundle' };
}

export const BUNDLE_ROUTES: readonly ConsoleRoute[] = [{ method: 'GET', path: '/t/:tenant/bundles/:bundle', handle: bundlePage }];
