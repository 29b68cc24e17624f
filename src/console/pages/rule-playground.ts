// The Verify Panel's Playground tab (docs/console.md, "Rule and Verify Panel"): a form to type or
// pick a request, and what the service decides for it (the deciding rule, or what each candidate
// missed), what this rule did, and, when an OPA is configured, the same request through each bundle
// that carries the rule. Renderers are pure; the POST handler runs OPA through playground.ts.
import { EMPTY_DIRECTORY, type DecisionInput } from '../../policy/index.ts';
import { type Html, html, raw } from '../html.ts';
import { badge, notice, table } from '../layout.ts';
import { bundleUrl, consoleUrl, ruleUrl } from '../paths.ts';
import {
  bundlesCarrying,
  decideHere,
  examplesFor,
  MAX_REQUEST_CHARS,
  type NativeVerdict,
  type OpaRow,
  readRequest,
  runOpa,
  type ThisRule,
} from '../playground.ts';
import type { PageAnswer, PageRequest } from '../routes.ts';
import { loadRule, type RuleView, rulePage } from './rule-view.ts';

export interface Tried {
  readonly input: DecisionInput;
  readonly native: NativeVerdict;
  /** OPA on each bundle carrying the rule; 'off': no OPA configured; 'busy': other runs under way. */
  readonly opa: readonly OpaRow[] | 'off' | 'busy';
}

export interface PlaygroundState {
  /** The request text, as typed (kept when it is refused). */
  readonly text: string;
  /** Why the request was refused, shown next to the textarea. */
  readonly error?: string;
  readonly tried?: Tried;
}

function examples(view: RuleView): { label: string; text: string }[] {
  return view.model ? examplesFor(view.model, view.served?.directory ?? EMPTY_DIRECTORY) : [];
}

/** The playground's opening text: the first example, or an empty request of the service's shape. */
export function firstExample(view: RuleView): string {
  return examples(view)[0]?.text ?? '{\n  "subject": { "type": "", "id": "" },\n  "action": "",\n  "resource": { "type": "", "id": "" }\n}';
}

function form(req: PageRequest, view: RuleView, state: PlaygroundState): Html {
  const list = examples(view);
  const invalid = state.error !== undefined;
  return html`<form method="post" action="${consoleUrl(['t', view.tenant, 'rules', view.name, 'playground'])}">
    <input type="hidden" name="_csrf" value="${req.csrf}" />
    <label for="pg-example">Example requests</label>
    <div class="actions">
      <select id="pg-example" name="example" data-fill="pg-request">
        <option value="">Pick an example…</option>
        ${list.map((e) => html`<option value="${e.text}">${e.label}</option>`)}
      </select>
      <button type="submit" name="load" value="1">Load example</button>
    </div>
    <label for="pg-request">Request (JSON, as POST /authorization or AuthZEN's access evaluation takes it)</label>
    ${invalid && html`<div id="pg-error" class="notice bad" role="alert">${state.error ?? ''}</div>`}
    <textarea id="pg-request" name="request" rows="14" spellcheck="false" maxlength="${String(MAX_REQUEST_CHARS)}"${
      invalid && raw(' aria-invalid="true" aria-describedby="pg-error"')
    }>
${state.text}</textarea>
    <div class="actions"><button type="submit" class="primary">Decide</button></div>
  </form>`;
}

/** What the rule in view did with the request, in a sentence or two. */
export function thisRuleText(view: RuleView, t: ThisRule, input: DecisionInput): Html {
  switch (t.kind) {
    case 'decided':
      return html`It allowed the request: the first rule, by name, whose condition holds.`;
    case 'matched-too':
      return html`It matches too, but rule <a href="${ruleUrl(view.tenant, t.by)}">${t.by}</a> decided (the first matching rule by name decides).`;
    case 'missed':
      return html`${t.reason}`;
    case 'not-candidate': {
      const m = view.model;
      const rule = m ? `a ${m.subjectType} ${m.actions.join(' or ')} a ${m.resourceType}` : 'nothing (its spec is invalid)';
      const asked = `a ${String(input.principal['type'])} ${input.action} a ${String(input.resource['type'])}`;
      return html`It does not apply: it is for ${rule}; this request asks whether ${asked}.`;
    }
    case 'not-deployed':
      return html`It is ${view.rule.status.phase ?? view.spec?.state ?? 'not in force'}, so it does not decide. Were it Enforced,
        ${t.wouldAllow ? 'it would allow this request.' : html`it would not allow it either: ${t.reason ?? ''}`}`;
  }
}

function opaRows(rows: readonly OpaRow[], native: NativeVerdict, view: RuleView): Html[] {
  return rows.map((r) => {
    const decided =
      'error' in r.outcome
        ? html`${badge('error', 'bad')} ${r.outcome.error}`
        : badge(r.outcome.allow ? 'allow' : 'deny', r.outcome.allow ? 'ok' : 'bad');
    const agreement =
      'error' in r.outcome
        ? html`<span class="muted">no decision</span>`
        : !r.admitted
          ? html`<span class="muted">not compared: the bundle's entityTypes leave out this request's types</span>`
          : r.outcome.allow === native.allow
            ? badge('agrees', 'ok')
            : badge('DISAGREES', 'bad');
    return html`<tr><td><a href="${bundleUrl(view.tenant, r.bundle)}">${r.bundle}</a></td><td class="num">${r.revision}</td><td>${decided}</td><td>${agreement}</td></tr>`;
  });
}

function opaPart(req: PageRequest, view: RuleView, tried: Tried): Html {
  const opa = req.deps.opa;
  if (tried.opa === 'off' || opa === undefined) {
    return html`<p class="muted">No OPA is configured (<code>--opa</code>): only the service's evaluator decided.</p>`;
  }
  if (tried.opa === 'busy') return notice('warn', 'OPA is busy with other playground requests: decide again in a moment.');
  if (tried.opa.length === 0)
    return html`<p class="muted">No bundle carries this rule: there is no Rego of it for OPA ${opa.version} to run.</p>`;
  const compared = tried.opa.filter((r) => r.admitted && !('error' in r.outcome));
  const differing = compared.filter((r) => 'allow' in r.outcome && r.outcome.allow !== tried.native.allow);
  const failed = tried.opa.some((r) => 'error' in r.outcome);
  const summary =
    differing.length > 0
      ? notice('bad', `OPA ${opa.version} disagrees with the service on ${differing.map((r) => r.bundle).join(', ')}.`)
      : failed
        ? notice('warn', `OPA ${opa.version} could not decide on every bundle: see below.`)
        : notice(
            'ok',
            `OPA ${opa.version} agrees with the service on ${compared.length === tried.opa.length ? 'every bundle' : 'every bundle compared'}.`,
          );
  return html`${summary}${table('OPA on each bundle carrying the rule', ['Bundle', 'Revision', 'OPA decides', 'Agreement'], opaRows(tried.opa, tried.native, view), '')}`;
}

function result(req: PageRequest, view: RuleView, tried: Tried): Html {
  const { native } = tried;
  return html`<section id="pg-result" aria-labelledby="pg-result-heading">
    <h3 id="pg-result-heading">Decision ${badge(native.allow ? 'ALLOW' : 'DENY', native.allow ? 'ok' : 'bad')}</h3>
    ${
      native.rule !== undefined
        ? html`<p>Decided by rule <a href="${ruleUrl(view.tenant, native.rule)}">${native.rule}</a>.</p>`
        : html`<p>No rule allowed it${native.reasons.length > 1 ? '; what each candidate missed:' : ':'}</p>`
    }
    <ul class="reasons">${native.reasons.map((r) => html`<li>${r}</li>`)}</ul>
    <p><strong>This rule:</strong> ${thisRuleText(view, native.thisRule, tried.input)}</p>
    <details><summary>The decision input, as the API maps the request</summary><pre>${JSON.stringify(tried.input, null, 2)}</pre></details>
    <h4>Through OPA</h4>
    ${opaPart(req, view, tried)}
  </section>`;
}

/** The Playground tab. */
export function playgroundTab(req: PageRequest, view: RuleView, state: PlaygroundState): Html {
  return html`<section aria-labelledby="playground-heading">
    <h3 id="playground-heading">Playground</h3>
    <p>Type a request, or pick one, and see what the service decides for tenant ${view.tenant}${
      req.deps.opa ? ' and what OPA decides on each bundle carrying this rule' : ''
    }. Nothing is logged as a decision.</p>
    ${form(req, view, state)}
    ${state.tried && result(req, view, state.tried)}
  </section>`;
}

/** POST …/playground (any signed-in viewer of the tenant; CSRF-checked by app.ts): decide the request typed, or load an example. */
export async function tryPlayground(req: PageRequest): Promise<PageAnswer> {
  const view = loadRule(req);
  if ('kind' in view) return view;
  const text = req.form?.get('request') ?? '';
  if (req.form?.has('load')) {
    return rulePage(req, view, 'playground', playgroundTab(req, view, { text: req.form.get('example') || text }));
  }
  const read = readRequest(text);
  if (!read.ok) return rulePage(req, view, 'playground', playgroundTab(req, view, { text, error: read.message }), 422);
  const native = decideHere(view.served, view.tenant, view.name, view.model, read.input);
  const bundles = bundlesCarrying(view.served, view.name);
  const opa = req.deps.opa === undefined ? 'off' : ((await runOpa(req.deps.opa, bundles, read.input)) ?? 'busy');
  return rulePage(req, view, 'playground', playgroundTab(req, view, { text, tried: { input: read.input, native, opa } }));
}
