// KeyRotated on a Bundle, beside RolledOut: the key each of its agents verifies with, against the
// keys that sign, through a whole rotation A → A+B → B, as `kubectl wait --for=condition=KeyRotated` reads it.
import { describe, expect, it } from 'vitest';
import { createAgentRegistry, type AgentRegistry } from '../fleet/index.ts';
import { generateSigningKeyPem, readSigningKey, type SigningKey } from '../signing/index.ts';
import { fakeSource, NS, RULE_SPEC, sourceObject, startController } from '../../test/support/controller.ts';
import { createSigningHolder, type SigningHolder } from './signing.ts';

const A = readSigningKey(generateSigningKeyPem());
const B = readSigningKey(generateSigningKeyPem());
const T0 = Date.parse('2026-11-28T08:00:00Z');
type Sighting = Parameters<AgentRegistry['record']>[0];

const sighting = (agentId: string, key: SigningKey | undefined, timeMs: number): Sighting => ({
  tenant: NS,
  agentId,
  version: '1.1.0',
  signingKey: key?.kid,
  clientIp: '10.0.0.1',
  timeMs,
  bundles: [
    {
      name: 'docs',
      activeRevision: '1',
      lastActivation: undefined,
      lastDownload: undefined,
      error: undefined,
      httpCode: undefined,
      stopping: false,
    },
  ],
});

function bundleWorld(signing?: SigningHolder) {
  const source = fakeSource([
    sourceObject('Connector', 'gateways', {}),
    sourceObject('Bundle', 'docs', { connector: 'gateways' }),
    sourceObject('Rule', 'team', RULE_SPEC),
  ]);
  const registry = createAgentRegistry({ windowMs: 60_000, maxAgents: 100 });
  let nowMs = T0;
  const run = startController(source, {
    now: () => new Date(nowMs),
    agents: {
      windowSeconds: 60,
      summary: (t, b, revision, at) => registry.summary(t, b, revision, at),
      agents: (t, b, at) => registry.agents(t, b, at),
    },
    ...(signing ? { signing } : {}),
  });
  return {
    registry,
    at: (ms: number) => {
      nowMs = ms;
    },
    drain: () => run.drain(),
    condition: (type: string) =>
      ((source.status('Bundle', 'docs')?.['conditions'] ?? []) as { type: string; status: string; reason: string; message: string }[]).find(
        (c) => c.type === type,
      ),
  };
}

describe('KeyRotated on a Bundle', () => {
  it('follows a whole rotation: OneKey, Rotating naming the agents still on the old key, AgentsMoved, OneKey again', async () => {
    const holder = createSigningHolder({ unsigned: false, ring: { current: A }, problem: undefined });
    const w = bundleWorld(holder);
    for (const id of ['opa-1', 'opa-2', 'opa-3']) w.registry.record(sighting(id, A, T0));
    await w.drain();
    expect(w.condition('KeyRotated')).toMatchObject({
      status: 'True',
      reason: 'OneKey',
      message: `${A.kid} signs alone; every agent (3) verifies with it`,
    });
    expect(w.condition('RolledOut')).toBeDefined();

    // The rotation starts: B signs, A too until it is retired.
    holder.set({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
    w.registry.record(sighting('opa-1', B, T0 + 1000));
    w.at(T0 + 1000);
    await w.drain();
    expect(w.condition('KeyRotated')).toMatchObject({
      status: 'False',
      reason: 'Rotating',
      message: `1 of 3 agents verify with ${B.kid}; waiting for opa-2 (${A.kid}), opa-3 (${A.kid}): restart them with the configuration that pins ${B.kid}`,
    });

    for (const id of ['opa-2', 'opa-3']) w.registry.record(sighting(id, B, T0 + 2000));
    w.at(T0 + 2000);
    await w.drain();
    expect(w.condition('KeyRotated')).toMatchObject({ status: 'True', reason: 'AgentsMoved' });

    // The source retired A.
    holder.set({ unsigned: false, ring: { current: B }, problem: undefined });
    await w.drain();
    expect(w.condition('KeyRotated')).toMatchObject({
      status: 'True',
      reason: 'OneKey',
      message: `${B.kid} signs alone; every agent (3) verifies with it`,
    });
  });

  it('is True/Unsigned when bundles are served unsigned (the default of a controller given no keys)', async () => {
    const w = bundleWorld();
    w.registry.record(sighting('opa-1', undefined, T0));
    await w.drain();
    expect(w.condition('KeyRotated')).toMatchObject({ status: 'True', reason: 'Unsigned' });
  });

  it('never carries the private key: only kids reach the condition', async () => {
    const holder = createSigningHolder({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
    const w = bundleWorld(holder);
    w.registry.record(sighting('opa-1', A, T0));
    await w.drain();
    const text = JSON.stringify(w.condition('KeyRotated'));
    expect(text).toContain(A.kid);
    for (const k of [A, B]) {
      const der = k.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
      expect(text).not.toContain(der.slice(40, 80));
      expect(text).not.toContain('PRIVATE KEY');
    }
  });
});
