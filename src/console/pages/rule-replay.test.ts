import { describe, expect, it } from 'vitest';
import { pageText, request, route, rule, SNAPSHOT, SPEC } from '../../../test/support/console-page.ts';
import { ruleModelFor } from '../../../test/support/rules.ts';
import { createRecentDecisions, type RecentDecision } from '../../fleet/index.ts';
import { buildIndex, compileRule, EMPTY_DIRECTORY } from '../../policy/index.ts';
import type { BundleEntry, Snapshot } from '../../store/index.ts';

const XSS = '<script>alert(1)</script>';
const team = ruleModelFor('team-docs', { condition: 'principal.team == resource.team' });

function snapshotWith(bundles: readonly string[]): Snapshot {
  // The replay reads a bundle's name and entity filter only.
  const entries = bundles.map(
    (name) =>
      [
        name,
        { tenant: 'acme', name, source: { entityTypes: '[]', rules: [team] }, built: { revision: 4 } } as unknown as BundleEntry,
      ] as const,
  );
  const acme = {
    tenant: 'acme',
    index: buildIndex('acme', [compileRule(team)]),
    connectors: new Map(),
    bundles: new Map(entries),
    directory: EMPTY_DIRECTORY,
  };
  return { ...SNAPSHOT, tenants: new Map([['acme', acme]]) };
}

function decision(i: number, allow: boolean, input: unknown, agent = 'opa-1'): RecentDecision {
  return {
    time: `2025-03-01T11:59:${String(i).padStart(2, '0')}.000Z`,
    agent,
    decisionId: `d${i}`,
    revision: '4',
    path: 'acl/allow',
    decision: allow ? 'allow' : 'deny',
    result: allow,
    input,
  };
}

const input = (team: string, docTeam: string, note = '') => ({
  principal: { type: 'user', id: `u-${team}`, team, note },
  action: 'read',
  resource: { type: 'document', id: 'd1', team: docTeam },
});

function recentWith(...list: RecentDecision[]) {
  const recent = createRecentDecisions();
  for (const d of list) recent.add('acme/docs', d);
  return recent;
}

const replay = (form: Record<string, string>, recent = recentWith(), objects = [rule()]) =>
  route('POST', '/replay').handle(request({ form, recent, snapshot: snapshotWith(['docs']), objects }));

describe('the Replay tab', () => {
  it('opens with the rule condition in a CSRF-protected form, and a link among the tabs', async () => {
    const text = await pageText(route('GET', '').handle(request({ query: 'tab=replay' })));
    expect(text).toMatch(/<a href="\/console\/t\/acme\/rules\/team-docs\?tab=replay" aria-current="page">Replay<\/a>/);
    expect(text).toContain('action="/console/t/acme/rules/team-docs/replay"');
    expect(text).toContain('<input type="hidden" name="_csrf" value="csrf-token" />');
    expect(text).toMatch(/<textarea id="rp-condition" name="condition"[^>]*>\nprincipal.team == resource.team<\/textarea>/);
  });

  it('lists what would flip, both ways, with the rule before and after, and the counts', async () => {
    const recent = recentWith(
      decision(1, true, input('blue', 'blue')),
      decision(2, false, input('red', 'blue')),
      decision(3, true, input('green', 'green')),
      decision(4, false, input('red', 'red')),
    );
    const text = await pageText(replay({ condition: 'principal.team == "blue" || resource.team == "blue"' }, recent));
    expect(text).toContain('Replayed 4 of 4 recent decisions');
    expect(text).toContain('2 would flip: 1 allow → deny, 1 deny → allow; 2 unchanged.');
    expect(text.match(/<span class="badge bad">allow → deny<\/span>/g)).toHaveLength(1);
    expect(text.match(/<span class="badge warn">deny → allow<\/span>/g)).toHaveLength(1);
    expect(text).toContain('<td><a href="/console/t/acme/rules/team-docs">team-docs</a></td>');
    expect(text).toContain('<a href="/console/t/acme/bundles/docs">docs</a> (4)');
    expect(text).toContain('Every recent decision held was replayed.');
  });

  it('shows hostile inputs, agents and conditions as text', async () => {
    const recent = recentWith(decision(1, true, input('blue', 'blue', XSS), `opa-${XSS}`));
    const condition = `false && "${XSS}" == "</textarea>"`;
    const text = await pageText(replay({ condition }, recent));
    expect(text).not.toContain(XSS);
    expect(text).not.toContain('</textarea>"');
    expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(text).toContain('opa-&lt;script&gt;');
    expect(text).toContain('1 would flip');
  });

  it('refuses a condition that does not compile next to the field, keeping it, and replays nothing', async () => {
    const answer = await replay({ condition: `principal.team == ${XSS}` });
    expect(answer).toMatchObject({ kind: 'page', status: 422 });
    const text = await pageText(answer);
    expect(text).toMatch(/<div id="rp-error" class="notice bad" role="alert">Not CEL \(line 1, column \d+\): /);
    expect(text).toContain('aria-invalid="true" aria-describedby="rp-error"');
    expect(text).toContain('principal.team == &lt;script&gt;');
    expect(text).not.toContain(XSS);
    expect(text).not.toContain('id="rp-result"');
  });

  it('takes an empty condition as none, and says what it could not replay and why', async () => {
    const recent = recentWith(
      decision(1, false, input('red', 'blue')),
      decision(2, false, { principal: { type: 'user' }, action: 'read', resource: {} }),
    );
    const text = await pageText(replay({ condition: '' }, recent));
    expect(text).toContain('Replayed 1 of 2 recent decisions');
    expect(text).toContain('1 would flip: 0 allow → deny, 1 deny → allow; 0 unchanged.');
    expect(text).toMatch(
      /<li>1 <code>refused-input<\/code>: an input the API would refuse\. <span class="muted">The API would refuse it: principal\.id is required\.<\/span><\/li>/,
    );
  });

  it('says so when no bundle would carry the rule', async () => {
    const text = await pageText(route('POST', '/replay').handle(request({ form: { condition: 'true' } })));
    expect(text).toContain('no bundle of acme would carry this rule');
  });

  it('says the rule is taken as Enforced, and replays a Proposed rule', async () => {
    const proposed = rule({ spec: { ...SPEC, state: 'Proposed' } });
    const text = await pageText(replay({ condition: 'true' }, recentWith(decision(1, false, input('red', 'blue'))), [proposed]));
    expect(text).toContain('taken as Enforced (it is Proposed now)');
    expect(text).toContain('1 deny → allow');
  });
});
