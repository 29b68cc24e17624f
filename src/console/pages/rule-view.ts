// A rule's page frame (docs/console.md, "Rule and Verify Panel"): what the rule says, its phase and
// conditions (Ready, and lint's Warning with each finding's fix), the bundles that carry it, the
// GitOps banner, and the Verify Panel's tabs around the tab in view. Pure.
import type { RuleSpec } from '../../api/index.ts';
import type { RuleModel } from '../../policy/index.ts';
import { readFindingsText } from '../../lint/index.ts';
import { gitOpsBanner, phaseBadge, problemOf, warningOf } from '../facts.ts';
import { type Html, html, raw } from '../html.ts';
import { notice } from '../layout.ts';
import { bundleUrl, consoleUrl } from '../paths.ts';
import { bundlesCarrying, modelOf, type TenantServed } from '../playground.ts';
import { notFound, type PageAnswer, type PageRequest } from '../routes.ts';
import { getViewed, type Viewed } from '../view.ts';
import { shadowSection } from './rule-shadow.ts';

export type Tab = 'translation' | 'playground' | 'replay';

/** A rule as its page shows it. */
export interface RuleView {
  readonly tenant: string;
  readonly name: string;
  readonly rule: Viewed<'Rule'>;
  readonly generation: number;
  /** The spec the page describes: the current one when valid, else the last good one its translation recorded. */
  readonly spec: RuleSpec | undefined;
  /** The rule compiled: its current spec, or when that does not compile the last good one (what it decides, or would decide, in force). */
  readonly model: RuleModel | undefined;
  /** What the tenant serves now (its rule index, directory and bundles). */
  readonly served: TenantServed | undefined;
}

/** The rule of the route's `:rule` in its tenant, or the 404 that says there is none. */
export function loadRule(req: PageRequest): RuleView | PageAnswer {
  const tenant = req.tenant as string;
  const name = req.params['rule'] ?? '';
  const rule = getViewed(req.deps.objects, 'Rule', tenant, name);
  if (rule === undefined) return notFound(`rule ${name} in ${tenant}`);
  const lastGood = rule.status.translation?.spec;
  const model = (rule.spec && modelOf(tenant, name, rule.spec)) ?? (lastGood && modelOf(tenant, name, lastGood));
  return {
    tenant,
    name,
    rule,
    generation: rule.object.metadata.generation ?? 0,
    spec: rule.spec ?? lastGood,
    model,
    served: req.snapshot.tenants.get(tenant),
  };
}

/** The rule page's URL with a tab. */
export function tabUrl(view: RuleView, tab: Tab) {
  return consoleUrl(['t', view.tenant, 'rules', view.name], { tab });
}

/** Lint's Warning message as a list: each finding and its fix. */
export function findings(message: string): Html {
  const items = readFindingsText(message).map((f) =>
    'text' in f ? html`<li>${f.text}</li>` : html`<li><code>${f.code}</code> ${f.message}. <strong>Fix:</strong> ${f.hint}</li>`,
  );
  return html`<ul class="findings">${items}</ul>`;
}

function conditionsOf(view: RuleView): Html {
  const { conditions } = view.rule.status;
  const problem = problemOf(conditions);
  const warning = warningOf(conditions);
  const ready = conditions?.find((c) => c.type === 'Ready');
  return html`${
    problem
      ? notice('bad', html`<strong>Not ready: ${problem.reason ?? 'Unknown'}</strong>. ${problem.message ?? ''}`)
      : ready
        ? html`<p><span class="muted">Ready:</span> ${ready.message ?? ready.reason ?? ''}</p>`
        : html`<p class="muted">The controller has not reported on this rule yet.</p>`
  }${warning && notice('warn', html`<strong>Lint: ${warning.reason ?? 'Warning'}</strong>${findings(warning.message ?? '')}`)}`;
}

function bundlesOf(view: RuleView): Html {
  const carrying = bundlesCarrying(view.served, view.name);
  if (carrying.length === 0) return html`<span class="muted">none (only an Enforced or Approved rule goes into bundles)</span>`;
  return html`${carrying.map(
    (b, i) =>
      html`${i > 0 ? ', ' : ''}<a href="${bundleUrl(view.tenant, b.name)}">${b.name}</a> <span class="muted">(revision ${b.built.revision})</span>`,
  )}`;
}

function specFacts(view: RuleView): Html {
  const { spec } = view;
  if (spec === undefined) return html`<p class="muted">The spec is invalid and no earlier version was ever translated.</p>`;
  const lastGood = view.rule.spec === undefined;
  return html`${lastGood && html`<p class="muted">The spec is invalid; this is the last good one (generation ${view.rule.status.translation?.generation ?? '?'}), still in force:</p>`}
    <dl class="facts">
      <dt>Description</dt><dd>${spec.description ?? html`<span class="muted">none</span>`}</dd>
      <dt>State</dt><dd>${spec.state}</dd>
      <dt>Subject type</dt><dd><code>${spec.subjectType}</code></dd>
      <dt>Actions</dt><dd>${spec.actions.map((a, i) => html`${i > 0 ? ' ' : ''}<code>${a}</code>`)}</dd>
      <dt>Resource type</dt><dd><code>${spec.resourceType}</code></dd>
      <dt>Condition</dt><dd>${spec.condition === undefined ? html`<span class="muted">none: every request of these types and actions</span>` : html`<pre>${spec.condition}</pre>`}</dd>
      <dt>Bundles</dt><dd>${bundlesOf(view)}</dd>
      <dt>Generation</dt><dd>${view.generation} <span class="muted">(status observed ${view.rule.status.observedGeneration ?? 'none yet'})</span></dd>
    </dl>`;
}

function tabs(view: RuleView, current: Tab): Html {
  const link = (tab: Tab, label: string) =>
    html`<a href="${tabUrl(view, tab)}"${current === tab && raw(' aria-current="page"')}>${label}</a>`;
  return html`<nav class="tabs" aria-label="Verify Panel">${link('translation', 'Translation')}${link('playground', 'Playground')}${link('replay', 'Replay')}</nav>`;
}

/** The whole rule page with `body` as the tab in view. */
export function rulePage(req: PageRequest, view: RuleView, tab: Tab, body: Html, status?: number): PageAnswer {
  const page = html`<h1>Rule ${view.name} ${phaseBadge(view.rule.status.phase)}</h1>
    ${gitOpsBanner(view.rule.object, req.deps.mode)}
    <div id="rule-live" data-live>${conditionsOf(view)}${specFacts(view)}${shadowSection(view, req.nowMs, req.deps.mode)}</div>
    <h2>Verify Panel</h2>
    ${tabs(view, tab)}
    ${body}`;
  return { kind: 'page', title: `Rule ${view.name}`, body: page, nav: 'rules', ...(status === undefined ? {} : { status }) };
}
