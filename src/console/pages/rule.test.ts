import { describe, expect, it } from 'vitest';
import { pageText, request, route, rule, SPEC } from '../../../test/support/console-page.ts';
import type { EditOutcome, FieldChange, ObjectEditor, ObjectKey } from '../../controller/index.ts';
import { renderHtml } from '../html.ts';
import { regeneratePending, translationState } from './rule-translation.ts';
import { findings, loadRule } from './rule-view.ts';

describe('translationState', () => {
  it('says STALE while the controller keeps an older translation in force', () => {
    expect(translationState({ status: 'Stale', generation: 1, message: 'generation 2 cannot be translated' }, 2)).toEqual({
      label: 'STALE',
      tone: 'warn',
      why: 'generation 2 cannot be translated',
    });
  });

  it('says STALE when the translation was made from a generation below the current one', () => {
    expect(translationState({ status: 'Current', generation: 1 }, 2)).toMatchObject({
      label: 'STALE',
      why: expect.stringContaining('generation 2 is not translated yet'),
    });
    expect(translationState({ status: 'Current', generation: 2 }, 2)).toMatchObject({ label: 'Current', tone: 'ok' });
  });

  it('says Error or Not translated', () => {
    expect(translationState({ status: 'Error', generation: 2, message: 'bad CEL' }, 2)).toMatchObject({ label: 'Error', why: 'bad CEL' });
    expect(translationState(undefined, 2).label).toBe('Not translated');
  });
});

describe('the rule page', () => {
  it('shows the spec, the condition in <pre>, and the Rego with STALE while it lags', async () => {
    const status = { phase: 'Enforced', translation: { status: 'Current', generation: 1, rego: 'allow if { input.x }' } };
    const text = await pageText(route('GET', '').handle(request({ objects: [rule({ status })] })));
    expect(text).toContain('<pre>principal.team == resource.team</pre>');
    expect(text).toContain('<span class="badge warn">STALE</span>');
    expect(text).toContain('<code>allow if { input.x }</code>');
    expect(text).toMatch(/<a href="\/console\/t\/acme\/rules\/team-docs\?tab=translation" aria-current="page">Translation<\/a>/);
    expect(text).toContain('action="/console/t/acme/rules/team-docs/regenerate"');
  });

  it('renders a description holding markup as text', async () => {
    const text = await pageText(
      route('GET', '').handle(request({ objects: [rule({ spec: { ...SPEC, description: '<script>alert(1)</script>' } })] })),
    );
    expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(text).not.toContain('<script>alert');
  });

  it("offers Regenerate to an admin only; a tenant's key is told why", async () => {
    const text = await pageText(route('GET', '').handle(request({ principal: { kind: 'tenant', tenant: 'acme' } })));
    expect(text).not.toContain('/regenerate"');
    expect(text).toContain("it needs the console's admin key");
  });

  it("shows an invalid spec's last good one and the Ready problem", async () => {
    const status = {
      phase: 'Invalid',
      conditions: [{ type: 'Ready', status: 'False', reason: 'InvalidCondition', message: 'condition: unexpected end' }],
      translation: { status: 'Stale', generation: 1, rego: 'r', spec: SPEC, message: 'generation 2 cannot be translated' },
    };
    const text = await pageText(route('GET', '').handle(request({ objects: [rule({ spec: { ...SPEC, actions: [] }, status })] })));
    expect(text).toContain('Not ready: InvalidCondition');
    expect(text).toContain('this is the last good one (generation 1), still in force');
    expect(text).toContain('<pre>principal.team == resource.team</pre>');
  });

  it('lists lint findings with their fix', () => {
    const text = renderHtml(
      findings('RuleNotBundled: no bundle selects it. Fix: add its types to entityTypes; StateNotSet: state is unset. Fix: set it'),
    );
    expect(text).toBe(
      '<ul class="findings"><li><code>RuleNotBundled</code> no bundle selects it. <strong>Fix:</strong> add its types to entityTypes</li><li><code>StateNotSet</code> state is unset. <strong>Fix:</strong> set it</li></ul>',
    );
  });

  it('opens the playground tab with the first example, and 404s an unknown tab or rule', async () => {
    const text = await pageText(route('GET', '').handle(request({ query: 'tab=playground' })));
    expect(text).toMatch(/<textarea id="pg-request"[^>]*>\n\{\n {2}&quot;subject&quot;/);
    expect(text).toContain('<select id="pg-example" name="example" data-fill="pg-request">');
    expect(await route('GET', '').handle(request({ query: 'tab=nope' }))).toMatchObject({ kind: 'problem', status: 404 });
    expect(await route('GET', '').handle(request({ rule: 'nope' }))).toMatchObject({ kind: 'problem', status: 404 });
  });
});

describe('Regenerate', () => {
  function recording(outcome: EditOutcome): { editor: ObjectEditor; calls: { key: ObjectKey; changes: readonly FieldChange[] }[] } {
    const calls: { key: ObjectKey; changes: readonly FieldChange[] }[] = [];
    return {
      calls,
      editor: {
        edit: async (key, changes) => {
          calls.push({ key, changes });
          return outcome;
        },
      },
    };
  }

  it('writes the regenerate annotation with the time, then goes back to the tab saying where it wrote', async () => {
    const { editor, calls } = recording({ ok: true, where: 'manifests/rules.yaml' });
    const answer = await route('POST', '/regenerate').handle(request({ editor, form: {} }));
    expect(calls).toEqual([
      {
        key: { kind: 'Rule', namespace: 'acme', name: 'team-docs' },
        changes: [{ path: ['metadata', 'annotations', 'acl.policyagent.dev/regenerate'], value: '2025-03-01T12:00:00.000Z' }],
      },
    ]);
    expect(answer).toMatchObject({ kind: 'redirect', flash: { tone: 'ok' } });
    if (answer.kind !== 'redirect') return;
    expect(answer.to.toString()).toBe('/console/t/acme/rules/team-docs?tab=translation');
    expect(answer.flash?.text).toContain('in manifests/rules.yaml. The translation follows');
  });

  it("answers the editor's failure with its status and message", async () => {
    const { editor } = recording({ ok: false, status: 409, message: 'the file changed meanwhile' });
    const answer = await route('POST', '/regenerate').handle(request({ editor, form: {} }));
    expect(answer).toMatchObject({
      kind: 'problem',
      status: 409,
      title: 'Regenerate failed',
      message: expect.stringContaining('the file changed meanwhile'),
    });
  });

  it('is an admin action; the playground is not', () => {
    expect(route('POST', '/regenerate').action).toBe(true);
    expect(route('POST', '/playground').action).toBeUndefined();
  });

  it('shows a Regenerate asked for that the translation was not yet made for', async () => {
    const annotations = { 'acl.policyagent.dev/regenerate': '2025-03-01T11:00:00.000Z' };
    const view = loadRule(request({ objects: [rule({ annotations, status: { translation: { status: 'Current', generation: 2 } } })] }));
    if ('kind' in view) throw new Error('no rule');
    expect(regeneratePending(view)).toBe('2025-03-01T11:00:00.000Z');
    const done = loadRule(
      request({
        objects: [
          rule({ annotations, status: { translation: { status: 'Current', generation: 2, regenerate: '2025-03-01T11:00:00.000Z' } } }),
        ],
      }),
    );
    if ('kind' in done) throw new Error('no rule');
    expect(regeneratePending(done)).toBeUndefined();
  });
});

describe('the playground form', () => {
  it('keeps the text typed and shows the error beside the textarea with 422', async () => {
    const answer = await route('POST', '/playground').handle(request({ form: { request: '{"subject": <b>' } }));
    expect(answer).toMatchObject({ kind: 'page', status: 422 });
    const text = await pageText(answer);
    expect(text).toContain('aria-invalid="true" aria-describedby="pg-error">\n{&quot;subject&quot;: &lt;b&gt;</textarea>');
    expect(text).toMatch(/<div id="pg-error" class="notice bad" role="alert">Not JSON: /);
  });

  it('loads the example picked, without deciding (the form works without script)', async () => {
    const answer = await route('POST', '/playground').handle(request({ form: { request: '', example: '{"a":1}', load: '1' } }));
    const text = await pageText(answer);
    expect(text).toContain('>\n{&quot;a&quot;:1}</textarea>');
    expect(text).not.toContain('pg-result');
  });
});
