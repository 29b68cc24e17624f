// The Verify Panel's Translation tab (docs/console.md, "Rule and Verify Panel"): the rule's Rego as
// the controller recorded it, `STALE` while it lags the spec, and Regenerate, which writes the
// acl.policyagent.dev/regenerate annotation where the rule lives (the controller translates again
// when that value is new to it; src/controller/rule.ts).
import type { RuleStatus } from '../../api/index.ts';
import { ANNOTATION_REGENERATE, fieldName, recordedRego, regenerateChanges } from '../../controller/index.ts';
import { type Html, html } from '../html.ts';
import { badge, notice } from '../layout.ts';
import { consoleUrl } from '../paths.ts';
import type { PageAnswer, PageRequest } from '../routes.ts';
import { loadRule, type RuleView, tabUrl } from './rule-view.ts';

type Translation = NonNullable<RuleStatus['translation']>;

export interface TranslationState {
  readonly label: 'Current' | 'STALE' | 'Error' | 'Not translated';
  readonly tone: 'ok' | 'warn' | 'bad' | 'muted';
  /** Why, in a sentence. */
  readonly why: string;
}

/**
 * Where the translation stands against the rule's spec: STALE while it lags (the controller
 * recorded Stale: a newer spec cannot be translated and an older one stays in force; or it was made
 * from a generation below the rule's current one: the controller has not caught up yet).
 */
export function translationState(t: Translation | undefined, generation: number): TranslationState {
  if (t === undefined) return { label: 'Not translated', tone: 'muted', why: 'The controller has not translated this rule yet.' };
  if (t.status === 'Error') return { label: 'Error', tone: 'bad', why: t.message ?? 'The rule cannot be translated.' };
  if (t.status === 'Stale') {
    return { label: 'STALE', tone: 'warn', why: t.message ?? `The translation of generation ${t.generation ?? '?'} stays in force.` };
  }
  if (t.generation !== undefined && t.generation < generation) {
    return {
      label: 'STALE',
      tone: 'warn',
      why: `Translated from generation ${t.generation}; generation ${generation} is not translated yet (the controller has not caught up).`,
    };
  }
  return { label: 'Current', tone: 'ok', why: `Translated from generation ${t.generation ?? generation}, the rule's current spec.` };
}

/** A Regenerate asked for (the annotation's value) that the recorded translation was not yet made for; undefined: none. */
export function regeneratePending(view: RuleView): string | undefined {
  const asked = view.rule.object.metadata.annotations?.[ANNOTATION_REGENERATE];
  return asked !== undefined && asked !== view.rule.status.translation?.regenerate ? asked : undefined;
}

function regenerateForm(req: PageRequest, view: RuleView): Html {
  if (req.principal.kind !== 'admin') {
    return html`<p class="muted">Regenerate changes the rule: it needs the console's admin key (a tenant's API key reads).</p>`;
  }
  const action = consoleUrl(['t', view.tenant, 'rules', view.name, 'regenerate']);
  return html`<form method="post" action="${action}" class="actions">
      <input type="hidden" name="_csrf" value="${req.csrf}" />
      <button type="submit" class="primary" aria-describedby="regenerate-help">Regenerate</button>
      <span id="regenerate-help" class="muted">Translates the rule again from its spec: writes the annotation
        <code>${ANNOTATION_REGENERATE}</code> on the rule ${req.deps.mode === 'kubernetes' ? 'object' : 'in its manifest file'}.</span>
    </form>`;
}

/**
 * The Rego the translation recorded. The Kubernetes cache keeps a Rule's status without it (the
 * controller derives it again from the spec), so it is made again here from the spec it records, or
 * the rule's own spec when that is the one translated.
 */
function regoOf(view: RuleView, t: Translation | undefined): string | undefined {
  if (!t || t.rego !== undefined || view.rule.object.statusDigest === undefined || t.status === 'Error') return t?.rego;
  const spec = t.spec ?? (t.generation === view.generation ? view.rule.spec : undefined);
  return spec && recordedRego(view.rule.object, spec);
}

/** The Translation tab. */
export function translationTab(req: PageRequest, view: RuleView): Html {
  const t = view.rule.status.translation;
  const rego = regoOf(view, t);
  const state = translationState(t, view.generation);
  const pending = regeneratePending(view);
  return html`<section id="rule-translation" data-live aria-labelledby="translation-heading">
    <h3 id="translation-heading">Translation ${badge(state.label, state.tone)}</h3>
    <p>${state.why}</p>
    ${pending !== undefined && notice('info', html`Regenerate was asked (<code>${pending}</code>): the controller has not translated the rule again yet.`)}
    ${
      rego === undefined
        ? html`<p class="muted">No Rego recorded.</p>`
        : html`<pre aria-label="Rego of rule ${view.name}" tabindex="0"><code>${rego}</code></pre>`
    }
    ${regenerateForm(req, view)}
  </section>`;
}

/** POST …/regenerate (admin only, CSRF-checked by app.ts): writes the annotation, then back to the tab with what was written where. */
export async function regenerate(req: PageRequest): Promise<PageAnswer> {
  const view = loadRule(req);
  if ('kind' in view) return view;
  const changes = regenerateChanges(new Date(req.nowMs).toISOString(), view.rule.object);
  const written = changes.map((c) => `${fieldName(c)} = ${JSON.stringify(c.value)}`).join(', ');
  const outcome = await req.deps.editor.edit({ kind: 'Rule', namespace: view.tenant, name: view.name }, changes);
  if (!outcome.ok) {
    req.deps.log.warn(
      { tenant: view.tenant, rule: view.name, status: outcome.status, problem: outcome.message },
      'Failed to ask a Rule to regenerate',
    );
    return {
      kind: 'problem',
      status: outcome.status,
      title: 'Regenerate failed',
      message: `Could not write ${written}: ${outcome.message}`,
    };
  }
  req.deps.log.info({ tenant: view.tenant, rule: view.name, where: outcome.where }, 'Asked a Rule to regenerate');
  return {
    kind: 'redirect',
    to: tabUrl(view, 'translation'),
    flash: {
      tone: 'ok',
      text: `Regenerate: wrote ${written} in ${outcome.where}. The translation follows once the controller has translated the rule again.`,
    },
  };
}
