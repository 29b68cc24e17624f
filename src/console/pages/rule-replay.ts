// The Verify Panel's Replay tab (docs/console.md, "Replay"): a form holding the rule's condition to
// edit, and what the edit would do to the recent decisions OPA reported for the bundles that would
// carry the rule (replay-recent.ts): what would flip, what stays, what could not be replayed and why.
// Nothing is saved. Renderers are pure; the POST handler only reads.
import { type Cond, compileCondition, type RuleModel } from '../../policy/index.ts';
import { type Html, html, raw } from '../html.ts';
import { badge, firstOf, notice, table, when } from '../layout.ts';
import { bundleUrl, consoleUrl, ruleUrl } from '../paths.ts';
import { RECENT_CAUSES, type RecentCause, type RecentFlip, type RecentReplay, replayRecentSteps } from '../replay-recent.ts';
import { createSlicer, drive } from '../../work/index.ts';
import type { PageAnswer, PageRequest } from '../routes.ts';
import { loadRule, type RuleView, rulePage } from './rule-view.ts';

/** The longest condition the tab takes: a Rule's spec.condition allows no more. */
export const MAX_CONDITION_CHARS = 8192;

export interface ReplayState {
  /** The condition as typed (kept when it is refused). */
  readonly text: string;
  /** Why the condition was refused, shown next to the field. */
  readonly error?: string;
  readonly result?: RecentReplay;
}

const CAUSE_TEXT: Record<RecentCause, string> = {
  'not-a-decision': 'not an allow or deny (OPA answered another query, or an error)',
  'not-kept': 'input too large for the recent decisions (the decision log has it whole)',
  'refused-input': 'an input the API would refuse',
};

/** The condition the tab opens with: the rule's current one (empty: it has none). */
export function currentCondition(view: RuleView): string {
  return view.spec?.condition ?? '';
}

function form(req: PageRequest, view: RuleView, state: ReplayState): Html {
  const invalid = state.error !== undefined;
  return html`<form method="post" action="${consoleUrl(['t', view.tenant, 'rules', view.name, 'replay'])}">
    <input type="hidden" name="_csrf" value="${req.csrf}" />
    <label for="rp-condition">Condition (CEL; empty: every request of the rule's types and actions)</label>
    ${invalid && html`<div id="rp-error" class="notice bad" role="alert">${state.error ?? ''}</div>`}
    <textarea id="rp-condition" name="condition" rows="5" spellcheck="false" maxlength="${String(MAX_CONDITION_CHARS)}"${
      invalid && raw(' aria-invalid="true" aria-describedby="rp-error"')
    }>
${state.text}</textarea>
    <div class="actions"><button type="submit" class="primary">Replay</button>
      <span class="muted">Nothing is saved: change the Rule itself to apply a condition.</span></div>
  </form>`;
}

function ruleCell(view: RuleView, name: string | undefined, known: boolean): Html {
  if (name !== undefined) return html`<a href="${ruleUrl(view.tenant, name)}">${name}</a>`;
  return known ? html`<span class="muted">none (deny)</span>` : html`<span class="muted">not known</span>`;
}

function flipRow(req: PageRequest, view: RuleView, f: RecentFlip): Html {
  const direction = f.change === 'allow-to-deny' ? badge('allow → deny', 'bad') : badge('deny → allow', 'warn');
  return html`<tr>
    <td>${direction}${f.already && html`<br /><span class="muted">already so without the edit</span>`}</td>
    <td><a href="${bundleUrl(view.tenant, f.bundle)}">${f.bundle}</a></td>
    <td>${when(f.time, req.nowMs)}<br /><span class="muted">${f.agent}${f.revision === undefined ? '' : `, revision ${f.revision}`}</span></td>
    <td>${ruleCell(view, f.ruleBefore, f.change === 'deny-to-allow')}</td>
    <td>${ruleCell(view, f.ruleAfter, true)}</td>
    <td><details><summary>${f.request}</summary><pre>${f.input}</pre></details></td>
  </tr>`;
}

function unreplayable(r: RecentReplay): Html {
  const causes = RECENT_CAUSES.filter((c) => r.unreplayable[c] > 0);
  if (causes.length === 0) return html`<p class="muted">Every recent decision held was replayed.</p>`;
  return html`<p>Not replayed:</p><ul>${causes.map(
    (c) => html`<li>${r.unreplayable[c]} <code>${c}</code>: ${CAUSE_TEXT[c]}. <span class="muted">${r.why[c] ?? ''}</span></li>`,
  )}</ul>`;
}

function result(req: PageRequest, view: RuleView, r: RecentReplay): Html {
  const held = r.bundles.reduce((n, b) => n + b.held, 0);
  const flipped = r.allowToDeny + r.denyToAllow;
  const shown = firstOf(r.flips, 'flips');
  const bundles =
    r.bundles.length === 0
      ? html`no bundle of ${view.tenant} would carry this rule (their entityTypes leave out its types)`
      : html`${r.bundles.map((b, i) => html`${i > 0 ? ', ' : ''}<a href="${bundleUrl(view.tenant, b.name)}">${b.name}</a> (${b.held})`)}`;
  return html`<section id="rp-result" aria-labelledby="rp-result-heading">
    <h4 id="rp-result-heading">Replayed ${r.replayed} of ${held} recent decisions</h4>
    <p>Bundles: ${bundles}.</p>
    ${
      flipped === 0
        ? notice('ok', `Nothing would flip: ${r.unchanged} unchanged.`)
        : notice('warn', `${flipped} would flip: ${r.allowToDeny} allow → deny, ${r.denyToAllow} deny → allow; ${r.unchanged} unchanged.`)
    }
    ${table(
      'What would flip',
      ['Direction', 'Bundle', 'Decided', 'Rule before', 'Rule after', 'Request (input redacted)'],
      shown.items.map((f) => flipRow(req, view, f)),
      'No decision would flip.',
    )}
    ${shown.note}
    ${unreplayable(r)}
  </section>`;
}

/** The Replay tab. */
export function replayTab(req: PageRequest, view: RuleView, state: ReplayState): Html {
  return html`<section aria-labelledby="replay-heading">
    <h3 id="replay-heading">Replay</h3>
    <p>Edit the condition and replay the recent decisions OPA reported for the bundles that would carry this rule (the newest
      ${req.deps.recent.capacity} per bundle) against tenant ${view.tenant}'s rules, with this condition in place of the rule's and the
      rule taken as Enforced${view.spec?.state === 'Enforced' ? '' : ` (it is ${view.spec?.state ?? 'invalid'} now)`}, as an OPA on each
      bundle would decide them. Inputs are redacted as in the recent decisions; a condition reading a redacted value sees
      <code>[redacted]</code>.</p>
    ${form(req, view, state)}
    ${state.result && result(req, view, state.result)}
  </section>`;
}

/** The condition typed, compiled (undefined: none), or why it is refused, in a sentence next to the field. */
function conditionOf(
  text: string,
): { readonly ok: true; readonly cond: Cond | undefined } | { readonly ok: false; readonly error: string } {
  if (text.length > MAX_CONDITION_CHARS) {
    return { ok: false, error: `The condition is ${text.length} characters; a rule's condition holds at most ${MAX_CONDITION_CHARS}.` };
  }
  if (text.trim() === '') return { ok: true, cond: undefined };
  const compiled = compileCondition(text);
  if (compiled.ok) return { ok: true, cond: compiled.cond };
  const { kind, line, column, message } = compiled.error;
  return { ok: false, error: `${kind === 'syntax' ? 'Not CEL' : 'Not supported'} (line ${line}, column ${column}): ${message}` };
}

/** POST …/replay (any signed-in viewer of the tenant; CSRF-checked by app.ts): replays with the condition typed; saves nothing. */
export async function tryReplay(req: PageRequest): Promise<PageAnswer> {
  const view = loadRule(req);
  if ('kind' in view) return view;
  const text = (req.form?.get('condition') ?? '').replace(/\r\n/g, '\n');
  const model = view.model;
  if (model === undefined) {
    return rulePage(req, view, 'replay', replayTab(req, view, { text, error: 'The rule has no valid spec to replay with.' }), 422);
  }
  const condition = conditionOf(text);
  if (!condition.ok) return rulePage(req, view, 'replay', replayTab(req, view, { text, error: condition.error }), 422);
  const edited: RuleModel = { ...model, conditionText: condition.cond === undefined ? undefined : text, condition: condition.cond };
  const steps = replayRecentSteps({ tenant: view.tenant, served: view.served, edited, recent: (key) => req.deps.recent.list(key) });
  const result = await drive(steps, createSlicer());
  return rulePage(req, view, 'replay', replayTab(req, view, { text, result }));
}
