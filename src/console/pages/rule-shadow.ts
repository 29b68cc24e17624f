// The rule page's shadow decisions (docs/console.md, "Shadow decisions"; docs/rules.md): what live
// traffic says of a Proposed rule (what it would allow that is denied now) or of a rule marked for
// removal (what its going would deny that is allowed now), from status.shadow, and in plain words
// what these mean and how to mark a rule. Pure.
import type { RuleShadowStatus } from '../../api/index.ts';
import { ANNOTATION_PROPOSED_STATE } from '../../shadow/index.ts';
import { type Html, html } from '../html.ts';
import { badge, when } from '../layout.ts';
import type { Mode } from '../deps.ts';
import type { RuleView } from './rule-view.ts';

/** States a rule marked for removal may be proposed to move to. */
const REMOVAL_STATES = ['Suspended', 'Archived', 'Draft'];

const count = (n: number): string => n.toLocaleString('en-US');

/** An example's input as readable JSON: indented when it parses (an input cut at 1,024 characters does not: shown as stored). */
export function readableInput(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function meaning(role: RuleShadowStatus['role'], tenant: string): Html {
  return role === 'Proposed'
    ? html`While this rule is <strong>Proposed</strong>, every live decision of tenant ${tenant} (both APIs) whose subject type,
        action and resource type it covers is also decided as if it were Enforced, after the answer was sent and without
        changing it. <em>Flips</em> are requests that were denied and that this rule would have allowed.`
    : html`This rule is <strong>marked for removal</strong>: every live decision it allows is also decided as if it were gone.
        <em>Flips</em> are requests that were allowed and that would be denied without it (no other rule, Enforced or
        Proposed, allows them). The answers sent do not change.`;
}

function howToMark(view: RuleView, mode: Mode): Html {
  const kubectl = `kubectl -n ${view.tenant} annotate rule ${view.name} ${ANNOTATION_PROPOSED_STATE}=Suspended`;
  const where =
    mode === 'kubernetes'
      ? html`: <code>${kubectl}</code>`
      : html` under <code>metadata.annotations</code> in its manifest file (with kubectl in a cluster: <code>${kubectl}</code>)`;
  return html`To see what removing it would stop allowing, mark it for removal: set the annotation
    <code>${ANNOTATION_PROPOSED_STATE}</code> to the state it would move to (${REMOVAL_STATES.join(', ')})${where}.
    It keeps deciding as it does; remove the annotation to stop counting.`;
}

function facts(s: RuleShadowStatus, nowMs: number): Html {
  return html`<dl class="facts">
      <dt>Summary</dt><dd><strong>${s.summary}</strong></dd>
      <dt>Evaluated</dt><dd>${count(s.evaluated)} <span class="muted">live decisions of its subject type, actions and resource type</span></dd>
      <dt>Matched</dt><dd>${count(s.matched)} <span class="muted">its condition was true</span></dd>
      <dt>Flips</dt><dd>${count(s.flips)} <span class="muted">${s.role === 'Proposed' ? 'deny → allow' : 'allow → deny'}</span></dd>
      <dt>Counting since</dt><dd>${when(s.since, nowMs)}${s.observedGeneration === undefined ? '' : html` <span class="muted">(generation ${s.observedGeneration}: an edit starts again)</span>`}</dd>
      <dt>First decision</dt><dd>${when(s.firstTime, nowMs)}</dd>
      <dt>Last decision</dt><dd>${when(s.lastTime, nowMs)}</dd>
      <dt>Last flip</dt><dd>${when(s.lastFlipTime, nowMs)}</dd>
    </dl>`;
}

function examples(s: RuleShadowStatus, nowMs: number): Html {
  const list = s.examples ?? [];
  if (list.length === 0) return html``;
  return html`<h4>Decisions it would have changed <span class="muted">(the first ${list.length}, inputs redacted)</span></h4>
    ${list.map(
      (e) => html`<details><summary>${when(e.time, nowMs)} <code>${e.time}</code></summary><pre>${readableInput(e.input)}</pre></details>`,
    )}`;
}

/** What the page says when status has no shadow counts: why, and how to get them. */
function noCounts(view: RuleView, mode: Mode): Html {
  const state = view.spec?.state;
  const marked = view.rule.object.metadata.annotations?.[ANNOTATION_PROPOSED_STATE];
  if (state === 'Proposed') {
    return html`<p>${meaning('Proposed', view.tenant)}</p>
      <p class="muted">No counts yet: the operator has not reported shadow decisions for this rule (no live decision of its types
        since it became Proposed, or its status is not written yet).</p>`;
  }
  if (marked !== undefined && (state === 'Enforced' || state === 'Approved')) {
    return REMOVAL_STATES.includes(marked)
      ? html`<p>${meaning('Removal', view.tenant)}</p><p class="muted">No counts yet (proposed state <code>${marked}</code>).</p>`
      : html`<p>The annotation <code>${ANNOTATION_PROPOSED_STATE}</code> is <code>${marked}</code>, which is not a state a rule is
          removed to (${REMOVAL_STATES.join(', ')}): it is ignored, and the rule's Ready condition says so.</p>`;
  }
  if (state === 'Enforced' || state === 'Approved') return html`<p>${howToMark(view, mode)}</p>`;
  return html`<p class="muted">Live traffic is counted for Proposed rules (what they would allow) and for Enforced rules marked for
    removal (what their going would deny). Set <code>state: Proposed</code> to count what this rule would do.</p>`;
}

/** The rule page's "Shadow decisions" section, from status.shadow. */
export function shadowSection(view: RuleView, nowMs: number, mode: Mode): Html {
  const s = view.rule.status.shadow;
  const heading = s
    ? html`Shadow decisions ${badge(s.role === 'Proposed' ? 'Proposed' : 'Marked for removal', s.flips > 0 ? 'warn' : 'info')}`
    : html`Shadow decisions`;
  return html`<section aria-labelledby="shadow-heading">
    <h3 id="shadow-heading">${heading}</h3>
    ${s ? html`<p>${meaning(s.role, view.tenant)}</p>${facts(s, nowMs)}${examples(s, nowMs)}` : noCounts(view, mode)}
  </section>`;
}
