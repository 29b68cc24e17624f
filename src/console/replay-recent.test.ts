import { describe, expect, it } from 'vitest';
import { ruleModelFor } from '../../test/support/rules.ts';
import { createRecentDecisions, parseLosslessJson, type RecentDecision } from '../fleet/index.ts';
import { buildDirectory, buildIndex, compileRule, EMPTY_DIRECTORY, type RuleModel } from '../policy/index.ts';
import type { BundleEntry } from '../store/index.ts';
import type { TenantServed } from './playground.ts';
import { loggedInputOf } from '../authzen/index.ts';
import { bundlesSelecting, loggedInput, type ReplayRecentOptions, replayRecentSteps } from './replay-recent.ts';

/** The steps straight through, as a slicer that never yields runs them. */
function replayRecent(o: ReplayRecentOptions) {
  for (const steps = replayRecentSteps(o); ; ) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

const team = ruleModelFor('team-docs', { actions: ['read', 'write'], condition: 'principal.team == resource.team' });
const admins = ruleModelFor('admins', { actions: ['read'], condition: '"admin" in principal.roles' });
const reports = ruleModelFor('reports', { resourceType: 'report', condition: 'true' });

function bundle(name: string, entityTypes: readonly string[] = []): BundleEntry {
  // Only the name and the entity filter are read by the replay.
  return { tenant: 'acme', name, source: { entityTypes: JSON.stringify(entityTypes) } } as unknown as BundleEntry;
}

function served(rules: readonly RuleModel[], bundles: readonly BundleEntry[], directory = EMPTY_DIRECTORY): TenantServed {
  return {
    tenant: 'acme',
    index: buildIndex('acme', rules.filter((r) => r.state === 'Enforced').map(compileRule)),
    connectors: new Map(),
    bundles: new Map(bundles.map((b) => [b.name, b])),
    directory,
  };
}

let n = 0;
function decision(input: unknown, allow: boolean | 'error', over: Partial<RecentDecision> = {}): RecentDecision {
  n++;
  return {
    time: `2026-11-28T10:00:${String(n % 60).padStart(2, '0')}.000Z`,
    agent: 'opa-1',
    decisionId: `d-${n}`,
    revision: '3',
    path: 'acl/allow',
    decision: allow === 'error' ? 'error' : allow ? 'allow' : 'deny',
    result: allow === 'error' ? undefined : allow,
    input,
    ...over,
  };
}

const read = (who: Record<string, unknown>, doc: Record<string, unknown>, action = 'read') => ({
  principal: { type: 'user', id: 'u1', ...who },
  action,
  resource: { type: 'document', id: 'd1', ...doc },
  context: {},
});

/** The fleet's buffer, as the console reads it: newest first, redacted. */
function recentOf(entries: Record<string, readonly RecentDecision[]>): (key: string) => readonly RecentDecision[] {
  const recent = createRecentDecisions();
  for (const [key, list] of Object.entries(entries)) for (const d of list) recent.add(key, d);
  return (key) => recent.list(key);
}

describe('replaying recent decisions with an edited condition', () => {
  it('finds what narrowing a condition would deny, naming the rule that allowed before', () => {
    const tenant = served([team, admins], [bundle('docs', ['document'])]);
    const recent = recentOf({
      'acme/docs': [
        decision(read({ team: 'blue' }, { team: 'blue', level: 1 }), true),
        decision(read({ team: 'blue' }, { team: 'blue', level: 5 }), true),
        decision(read({ team: 'red' }, { team: 'blue', level: 1 }), false),
      ],
    });
    const edited = ruleModelFor('team-docs', {
      actions: ['read', 'write'],
      condition: 'principal.team == resource.team && resource.level < 3',
    });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited, recent });
    expect(r).toMatchObject({ replayed: 3, unchanged: 2, allowToDeny: 1, denyToAllow: 0, bundles: [{ name: 'docs', held: 3 }] });
    expect(r.flips).toHaveLength(1);
    expect(r.flips[0]).toMatchObject({
      bundle: 'docs',
      change: 'allow-to-deny',
      ruleBefore: 'team-docs',
      ruleAfter: undefined,
      already: false,
    });
    expect(JSON.parse(r.flips[0]?.input ?? '')).toMatchObject({ resource: { level: 5 } });
    expect(r.flips[0]?.request).toBe('user u1 read document d1');
  });

  it('shows what a Proposed rule would allow, as if it were Enforced', () => {
    const proposed = ruleModelFor('partners', { state: 'Proposed', condition: 'principal.partner == true' });
    const tenant = served([team, proposed], [bundle('docs')]);
    const recent = recentOf({
      'acme/docs': [decision(read({ partner: true }, {}), false), decision(read({ partner: false }, {}), false)],
    });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited: proposed, recent });
    expect(r).toMatchObject({ replayed: 2, unchanged: 1, allowToDeny: 0, denyToAllow: 1 });
    expect(r.flips[0]).toMatchObject({ change: 'deny-to-allow', ruleBefore: undefined, ruleAfter: 'partners', already: false });
  });

  it("decides on each bundle with the rules its entityTypes filter takes, as that bundle's OPA would", () => {
    // Bundle "reports-only" would not carry a document rule: it is not replayed. Bundle "users" takes
    // every rule of subject type user, so both; "docs" also takes admins.
    const tenant = served(
      [team, admins, reports],
      [bundle('users', ['user']), bundle('docs', ['document']), bundle('reports-only', ['report'])],
    );
    expect(bundlesSelecting(tenant, team).map((b) => b.name)).toEqual(['docs', 'users']);
    const admin = read({ roles: ['admin'], team: 'green' }, { team: 'blue' });
    const recent = recentOf({
      'acme/docs': [decision(admin, true)],
      'acme/users': [decision(admin, true)],
      'acme/reports-only': [decision(admin, false)],
    });
    const edited = ruleModelFor('team-docs', { actions: ['read', 'write'], condition: 'false' });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited, recent });
    expect(r.bundles).toEqual([
      { name: 'docs', held: 1 },
      { name: 'users', held: 1 },
    ]);
    // admins still allows on both: nothing flips, and the held decision of reports-only is not looked at.
    expect(r).toMatchObject({ replayed: 2, unchanged: 2, allowToDeny: 0 });
  });

  it('merges the directory into the input as a decision does', () => {
    const directory = buildDirectory([{ type: 'user', id: 'u1', properties: { team: 'blue' } }]);
    const tenant = served([], [bundle('docs')], directory);
    const recent = recentOf({ 'acme/docs': [decision(read({}, { team: 'blue' }), false)] });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited: team, recent });
    expect(r).toMatchObject({ denyToAllow: 1 });
    expect(r.flips[0]?.ruleAfter).toBe('team-docs');
  });

  it('says when the rules in force already decide a flip that way (they changed since OPA decided)', () => {
    const tenant = served([team], [bundle('docs')]);
    // OPA allowed it on an older revision; the team rule in force now denies it, and so does the edit.
    const recent = recentOf({ 'acme/docs': [decision(read({ team: 'red' }, { team: 'blue' }), true, { revision: '1' })] });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited: team, recent });
    expect(r.flips[0]).toMatchObject({ change: 'allow-to-deny', ruleBefore: undefined, already: true, revision: '1' });
  });

  it('counts what it cannot replay by cause, and never drops a decision', () => {
    const tenant = served([team], [bundle('docs')]);
    const huge = read({ note: 'x'.repeat(5000) }, {});
    const exact = parseLosslessJson(
      '{"principal":{"type":"user","id":"u1","n":9007199254740993},"action":"read","resource":{"type":"document","id":"d"}}',
    );
    const kinds = [
      decision(read({ team: 'a' }, { team: 'a' }), true),
      decision(read({ team: 'a' }, { team: 'b' }), false),
      decision(read({}, {}), 'error'),
      decision(huge, true),
      decision({ principal: { type: 'user' }, action: 'read', resource: { type: 'document', id: 'd' } }, false),
      decision({ principal: { type: '', id: 'x' }, action: 'read', resource: { type: 'document', id: 'd' } }, false),
      decision(exact, false),
      decision('not an object', false),
    ];
    // Many in a row, in a random order, past the buffer's capacity: every held decision is accounted for.
    const list: RecentDecision[] = [];
    for (let i = 0; i < 250; i++) list.push(kinds[(i * 7919) % kinds.length] as RecentDecision);
    const recent = recentOf({ 'acme/docs': list });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited: team, recent });
    const unreplayed = Object.values(r.unreplayable).reduce((a, b) => a + b, 0);
    expect(r.bundles[0]?.held).toBe(100);
    expect(r.replayed + unreplayed).toBe(100);
    expect(r.unreplayable['not-a-decision']).toBeGreaterThan(0);
    expect(r.unreplayable['not-kept']).toBeGreaterThan(0);
    expect(r.unreplayable['refused-input']).toBeGreaterThan(0);
    expect(r.why['refused-input']).toMatch(/^The API would refuse it: /);
    expect(r.why['not-a-decision']).toContain('error');
    expect(r.replayed).toBe(r.unchanged + r.allowToDeny + r.denyToAllow);
  });

  it('replays in steps, so a slicer can give the event loop back between them', () => {
    const tenant = served([team], [bundle('a'), bundle('b')]);
    const list = Array.from({ length: 100 }, (_, i) => decision(read({ team: 'x' }, { team: i % 2 ? 'x' : 'y' }), i % 2 === 1));
    const recent = recentOf({ 'acme/a': list, 'acme/b': list });
    const steps = replayRecentSteps({ tenant: 'acme', served: tenant, edited: team, recent });
    let count = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) count++;
    // Two indexes built in steps, and a step every 25 of the 200 decisions.
    expect(count).toBeGreaterThanOrEqual(8);
    expect(step.value).toMatchObject({ replayed: 200, unchanged: 200 });
  });

  it('replays the inputs as held, credentials redacted', () => {
    const tenant = served([team], [bundle('docs')]);
    const input = { ...read({ team: 'blue' }, { team: 'blue' }), context: { headers: { authorization: 'Bearer abcdefghijkl' } } };
    const recent = recentOf({ 'acme/docs': [decision(input, true)] });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited: { ...team, condition: undefined, conditionText: undefined }, recent });
    expect(r.unchanged).toBe(1);
    const denying = ruleModelFor('team-docs', { actions: ['read', 'write'], condition: 'false' });
    const flipped = replayRecent({ tenant: 'acme', served: tenant, edited: denying, recent });
    expect(flipped.flips[0]?.input).toContain('[redacted]');
    expect(flipped.flips[0]?.input).not.toContain('abcdefghijkl');
  });

  it('checks a logged input as the API checks a request, keeping an attribute named properties', () => {
    const ok = loggedInput({
      principal: { type: 'user', id: 'u', properties: { a: 1 } },
      action: 'read',
      resource: { type: 'doc', id: 'd' },
    });
    expect(ok.ok && ok.input.principal).toEqual({ type: 'user', id: 'u', properties: { a: 1 } });
    const withAction = loggedInput({
      principal: { type: 'u', id: 'u' },
      action: 'read',
      actionProperties: { name: 'n' },
      resource: { type: 'd', id: 'd' },
    });
    expect(withAction.ok && withAction.input.actionProperties).toEqual({ name: 'n' });
    expect(loggedInput({ principal: { type: 'u', id: 'x'.repeat(1025) }, action: 'read', resource: { type: 'd', id: 'd' } })).toMatchObject(
      {
        ok: false,
        message: expect.stringContaining('at most 1024'),
      },
    );
    expect(loggedInput({ principal: { type: 'u', id: 'u' }, action: 7, resource: { type: 'd', id: 'd' } }).ok).toBe(false);
    // A number a double cannot hold as written: the API refuses it rather than decide on a rounded one.
    const exact = parseLosslessJson(
      '{"principal":{"type":"u","id":"u","n":9007199254740993},"action":"a","resource":{"type":"d","id":"d"}}',
    );
    expect(loggedInput(exact).ok).toBe(false);
  });

  it('accepts and refuses exactly the logged inputs acl-operator replay accepts and refuses (an object action is refused)', () => {
    const base = { principal: { type: 'user', id: 'u' }, resource: { type: 'doc', id: 'd' } };
    const inputs: unknown[] = [
      { ...base, action: 'read' },
      // An OPA asked with an object action compared the object (its rules deny): not the action named in it.
      { ...base, action: { name: 'read' } },
      { ...base, action: { name: 'read' }, actionProperties: { level: 1 } },
      { ...base, action: 'read', actionProperties: { name: 'n' } },
      { ...base, action: 'read', actionProperties: null },
      { ...base, action: 'read', context: null },
      { ...base, action: '' },
      { ...base, principal: { type: 'user' }, action: 'read' },
      { ...base, principal: { type: 'user', id: 7 }, action: 'read' },
      { ...base, principal: { type: 'user', id: 'u', properties: { a: 1 } }, action: 'read' },
      'not an object',
    ];
    for (const input of inputs) {
      // The check src/replay/record.ts makes of each line's input.
      const cli = loggedInputOf(input);
      const console = loggedInput(input);
      expect({ input, ok: console.ok }).toEqual({ input, ok: cli.ok });
      if (cli.ok && console.ok) expect(console.input).toEqual(cli.input);
    }
    // The OPA denied an object action (its rules compare a name): no flip to allow, a refused input.
    const tenant = served([team], [bundle('docs')]);
    const recent = recentOf({ 'acme/docs': [decision({ ...read({ team: 'blue' }, { team: 'blue' }), action: { name: 'read' } }, false)] });
    const r = replayRecent({ tenant: 'acme', served: tenant, edited: team, recent });
    expect(r).toMatchObject({ replayed: 0, denyToAllow: 0, unreplayable: { 'refused-input': 1 } });
  });
});
