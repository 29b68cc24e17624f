import { describe, expect, it } from 'vitest';
import { SIGNING_KEY_LABEL as PRINTED_LABEL } from '../opa/index.ts';
import type { Agent, Sighting } from './agents.ts';
import { keyCounts, keyRotated, keysInUse, retirementDue } from './index.ts';
import { keyRotatedCondition } from './keys.ts';
import { createAgentRegistry } from './registry.ts';
import { parseStatusReport, SIGNING_KEY_LABEL, type BundleReport } from './report.ts';
import { agentFixture, bundleEntry } from '../../test/support/fleet.ts';

const A = 'acl-aaaaaaaaaaaaaaaa';
const B = 'acl-bbbbbbbbbbbbbbbb';
const T0 = Date.parse('2026-11-28T08:00:00Z');
const WINDOW_MS = 60_000;

const agent = (id: string, signingKey: string | undefined, over: Partial<Agent> = {}): Agent =>
  agentFixture(id, { lastReportMs: T0, activeRevision: '3', signingKey, ...over });
const entry = (name: string): BundleReport => bundleEntry(name);
const seen = (agentId: string, signingKey: string | undefined, timeMs: number, bundles: string[], tenant = 'acme'): Sighting => ({
  tenant,
  agentId,
  version: '1.1.0',
  signingKey,
  clientIp: '10.0.0.1',
  timeMs,
  bundles: bundles.map(entry),
});
const registry = () => {
  const changes: string[] = [];
  const r = createAgentRegistry({ windowMs: WINDOW_MS, maxAgents: 10_000 });
  r.onChange((t, b) => changes.push(`${t}/${b}`));
  return { r, changes };
};

describe("an agent's acl-signing-key label", () => {
  it('is the label opa/config.ts prints into every configuration', () => {
    expect(SIGNING_KEY_LABEL).toBe(PRINTED_LABEL);
  });

  it('is read from a status report, beside labels.id and labels.version', () => {
    const r = parseStatusReport({ labels: { id: 'opa-1', version: '1.1.0', [SIGNING_KEY_LABEL]: B }, bundles: { docs: {} } });
    expect(r.ok && r.value).toMatchObject({ agentId: 'opa-1', version: '1.1.0', signingKey: B });
    const none = parseStatusReport({ labels: { id: 'opa-2' }, bundles: { docs: {} } });
    expect(none.ok && none.value.signingKey).toBeUndefined();
  });

  it.each([
    ['too long', 'k'.repeat(129)],
    ['not printable', 'acl-\u0000\u001b[31m'],
    ['with a space', 'acl a'],
    ['empty', ''],
    ['not a string', 7],
  ])('reads as no label when %s, and the report still counts (its agent must hold a rotation back, not vanish)', (_, value) => {
    const r = parseStatusReport({ labels: { id: 'opa-1', [SIGNING_KEY_LABEL]: value }, bundles: { docs: { active_revision: '3' } } });
    expect(r.ok).toBe(true);
    expect(r.ok && r.value.signingKey).toBeUndefined();
    expect(r.ok && r.value.bundles).toHaveLength(1);
  });
});

describe('the registry and the key each agent verifies with', () => {
  it('carries the label into the agent of every bundle the report names, and into what it shares with peers', () => {
    const { r } = registry();
    r.record(seen('opa-1', B, T0, ['docs', 'billing']));
    expect(r.agents('acme', 'docs', T0).map((a) => a.signingKey)).toEqual([B]);
    expect(r.agents('acme', 'billing', T0).map((a) => a.signingKey)).toEqual([B]);
    expect(r.exportLocal(T0)['acme/docs']?.map((a) => a.signingKey)).toEqual([B]);
  });

  it('announces the bundle when a restarted sidecar reports the new key, and not when a report only repeats it', () => {
    const { r, changes } = registry();
    r.record(seen('opa-1', A, T0, ['docs']));
    r.record(seen('opa-1', A, T0 + 10_000, ['docs']));
    expect(changes).toEqual(['acme/docs']);
    r.record(seen('opa-1', B, T0 + 20_000, ['docs']));
    expect(changes).toEqual(['acme/docs', 'acme/docs']);
  });

  it("announces the bundle when a peer's agent moves to the new key", () => {
    const { r, changes } = registry();
    r.setPeer('replica-2', { 'acme/docs': [agent('opa-9', A)] }, T0);
    r.setPeer('replica-2', { 'acme/docs': [agent('opa-9', B, { lastReportMs: T0 + 5000 })] }, T0 + 5000);
    expect(changes).toEqual(['acme/docs', 'acme/docs']);
    expect(r.agents('acme', 'docs', T0 + 5000).map((a) => a.signingKey)).toEqual([B]);
  });
});

describe('KeyRotated', () => {
  it('is True/OneKey while one key signs, saying every agent verifies with it, or that none reports', () => {
    expect(keyRotatedCondition([agent('a', B), agent('b', B)], B)).toEqual({
      status: 'True',
      reason: 'OneKey',
      message: `${B} signs alone; every agent (2) verifies with it`,
    });
    expect(keyRotatedCondition([], B)).toEqual({ status: 'True', reason: 'OneKey', message: `${B} signs alone; no agent reports` });
  });

  it('while one key signs, still names the agents that verify with another key or name none', () => {
    const c = keyRotatedCondition([agent('a', B), agent('b', A), agent('c', undefined)], B);
    expect(c).toMatchObject({ status: 'True', reason: 'OneKey' });
    expect(c.message).toBe(
      `${B} signs alone; 1 of 3 agents verify with it, not b (${A}), c (no acl-signing-key label: started from a configuration acl-operator did not print): restart them with the configuration acl-operator prints now`,
    );
  });

  it('is False/Rotating while a previous key signs and some agent verifies with it or names no key, naming them by id', () => {
    const c = keyRotatedCondition([agent('opa-3', B), agent('opa-2', undefined), agent('opa-1', A)], B, A);
    expect(c).toEqual({
      status: 'False',
      reason: 'Rotating',
      message:
        `1 of 3 agents verify with ${B}; waiting for opa-1 (${A}), ` +
        'opa-2 (no acl-signing-key label: started from a configuration acl-operator did not print): ' +
        `restart them with the configuration that pins ${B}`,
    });
  });

  it('names at most five of a thousand agents still on the previous key, and counts the rest', () => {
    const agents = Array.from({ length: 1000 }, (_, i) => agent(`opa-${String(i).padStart(4, '0')}`, i % 4 === 0 ? A : B));
    const c = keyRotatedCondition(agents, B, A);
    expect(c.status).toBe('False');
    expect(c.message).toBe(
      `750 of 1000 agents verify with ${B}; waiting for opa-0000 (${A}), opa-0004 (${A}), opa-0008 (${A}), opa-0012 (${A}), opa-0016 (${A}) and 245 more: restart them with the configuration that pins ${B}`,
    );
  });

  it('is True/AgentsMoved once every agent verifies with the current key, and with no agent at all', () => {
    const moved = keyRotatedCondition([agent('a', B), agent('b', B)], B, A);
    expect(moved).toEqual({
      status: 'True',
      reason: 'AgentsMoved',
      message: `Every agent (2) verifies with ${B}; ${A} is retired once every bundle's agents do`,
    });
    expect(keyRotatedCondition([], B, A)).toMatchObject({ status: 'True', reason: 'AgentsMoved' });
  });

  it('is True/Unsigned with --unsigned-bundles and Unknown/NoSigningKey while no key was ever read', () => {
    expect(keyRotated([agent('a', undefined)], keysInUse({ unsigned: true }))).toMatchObject({ status: 'True', reason: 'Unsigned' });
    expect(keyRotated([agent('a', A)], keysInUse({ unsigned: false, ring: undefined }))).toMatchObject({
      status: 'Unknown',
      reason: 'NoSigningKey',
    });
    const ring = { current: { kid: B }, previous: { kid: A } };
    expect(keysInUse({ unsigned: false, ring })).toEqual({ kind: 'signed', current: B, previous: A });
    expect(keyRotated([agent('a', A)], keysInUse({ unsigned: false, ring }))).toMatchObject({ status: 'False', reason: 'Rotating' });
  });

  it('counts agents by key, most first, no label last', () => {
    const agents = [agent('a', A), agent('b', B), agent('c', undefined), agent('d', B), agent('e', A), agent('f', B)];
    expect(keyCounts(agents)).toEqual([
      { kid: B, agents: 3 },
      { kid: A, agents: 2 },
      { kid: undefined, agents: 1 },
    ]);
    expect(keyCounts([])).toEqual([]);
  });
});

describe('retiring the previous key', () => {
  const bundles = [
    { tenant: 'acme', name: 'docs' },
    { tenant: 'acme', name: 'billing' },
    { tenant: 'globex', name: 'docs' },
  ];
  const LISTENING = T0 - WINDOW_MS;

  it('is due only when every agent of every bundle verifies with the current key, naming who is waited for', () => {
    const { r } = registry();
    for (let i = 0; i < 30; i++) r.record(seen(`opa-${i}`, B, T0, ['docs']));
    for (let i = 0; i < 30; i++) r.record(seen(`globex-${i}`, B, T0, ['docs'], 'globex'));
    r.record(seen('late', A, T0, ['billing']));
    r.record(seen('hand-written', undefined, T0, ['docs'], 'globex'));
    const waiting = retirementDue(r, bundles, B, T0, LISTENING);
    expect(waiting).toEqual({
      due: false,
      agents: 62,
      waiting: 2,
      waitingFor: [
        `acme/billing late (${A})`,
        'globex/docs hand-written (no acl-signing-key label: started from a configuration acl-operator did not print)',
      ],
      reason: `2 of 62 agents do not verify with ${B}`,
    });
    // Both restart with the configuration that pins B.
    r.record(seen('late', B, T0 + 1000, ['billing']));
    r.record(seen('hand-written', B, T0 + 1000, ['docs'], 'globex'));
    expect(retirementDue(r, bundles, B, T0 + 1000, LISTENING)).toMatchObject({ due: true, agents: 62, waiting: 0, reason: undefined });
  });

  it('is not held back by an agent silent for longer than the window, nor by bundles not asked about', () => {
    const { r } = registry();
    r.record(seen('gone', A, T0, ['docs']));
    r.record(seen('kept', B, T0 + WINDOW_MS, ['docs']));
    r.record(seen('elsewhere', A, T0 + WINDOW_MS, ['other']));
    expect(retirementDue(r, bundles, B, T0 + WINDOW_MS, LISTENING).due).toBe(false);
    expect(retirementDue(r, bundles, B, T0 + WINDOW_MS + 1, LISTENING)).toMatchObject({ due: true, agents: 1 });
  });

  it("is held back by an agent only a peer replica hears, until the peer's report says it moved", () => {
    const { r } = registry();
    r.record(seen('own', B, T0, ['docs']));
    r.setPeer('replica-2', { 'acme/docs': [agent('peer-heard', A)] }, T0);
    expect(retirementDue(r, bundles, B, T0, LISTENING)).toMatchObject({ due: false, waitingFor: [`acme/docs peer-heard (${A})`] });
    r.setPeer('replica-2', { 'acme/docs': [agent('peer-heard', B, { lastReportMs: T0 + 10 })] }, T0 + 10);
    expect(retirementDue(r, bundles, B, T0 + 10, LISTENING).due).toBe(true);
  });

  it('is not due when a peer replica that heard an agent on the previous key goes away, until a window has passed', () => {
    // Two replicas: 'peer-heard' (pinned to A) reports to replica-2. replica-2's Pod is deleted (a
    // rollout, a drain; the leader may be the one that goes): its agents ConfigMap goes with it, and
    // this replica forgets 'peer-heard' before that OPA's next report reaches it.
    const { r } = registry();
    r.record(seen('own', B, T0, ['docs']));
    r.setPeer('replica-2', { 'acme/docs': [agent('peer-heard', A)] }, T0);
    r.setPeer('replica-2', undefined, T0 + 1000);
    expect(retirementDue(r, bundles, B, T0 + 1000, LISTENING)).toMatchObject({ due: false, agents: 1, waiting: 0 });
    // The OPA reports here at its next poll: it is waited for by name.
    r.record(seen('peer-heard', A, T0 + 20_000, ['docs']));
    expect(retirementDue(r, bundles, B, T0 + 20_000, LISTENING)).toMatchObject({ due: false, waiting: 1 });
    // Had it stopped instead, a whole window after the peer left nothing holds the key back.
    const { r: r2 } = registry();
    r2.record(seen('own', B, T0 + 1000 + WINDOW_MS, ['docs']));
    r2.setPeer('replica-2', { 'acme/docs': [agent('peer-heard', A)] }, T0);
    r2.setPeer('replica-2', undefined, T0 + 1000);
    expect(retirementDue(r2, bundles, B, T0 + 1000 + WINDOW_MS, LISTENING).due).toBe(true);
  });

  it('is never due before status reports have been heard for a whole window: an empty registry after a restart is not an empty fleet', () => {
    const { r } = registry();
    const started = T0;
    expect(retirementDue(r, bundles, B, started + 1000, started)).toMatchObject({
      due: false,
      agents: 0,
      reason: 'status reports heard for 1 s of the 60 s window: an agent may not have reported yet',
    });
    expect(retirementDue(r, bundles, B, started + WINDOW_MS, started).due).toBe(true);
  });

  it('names at most five waiting agents over many bundles, and counts them all', () => {
    const { r } = registry();
    const many = Array.from({ length: 40 }, (_, i) => ({ tenant: 'acme', name: `b${i}` }));
    for (const [i, b] of many.entries()) r.record(seen(`opa-${i}`, i % 2 === 0 ? A : B, T0, [b.name]));
    const due = retirementDue(r, many, B, T0, LISTENING);
    expect(due).toMatchObject({ due: false, agents: 40, waiting: 20 });
    expect(due.waitingFor).toHaveLength(5);
  });
});
