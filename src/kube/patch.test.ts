import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { activeChanges, regenerateChanges, type FieldChange, type ObjectKey } from '../controller/index.ts';
import type { KubeClients } from './client.ts';
import { createObjectPatcher } from './patch.ts';

const log = pino({ level: 'silent' });
const CONNECTOR: ObjectKey = { kind: 'Connector', namespace: 'acme', name: 'gateway' };

/** A patcher over a fake CustomObjectsApi that records each request, or fails with `error`. */
function patcherWith(error?: { code: number; body: string }) {
  const requests: unknown[] = [];
  const custom = {
    async patchNamespacedCustomObject(request: unknown) {
      requests.push(request);
      if (error) throw Object.assign(new Error(`HTTP-Code: ${error.code}`), error);
      return {};
    },
  };
  return { patcher: createObjectPatcher({ custom } as unknown as KubeClients, log), requests };
}

describe('the object patcher', () => {
  it('sends one merge patch holding every change, at the object of the key', async () => {
    const { patcher, requests } = patcherWith();
    const changes: FieldChange[] = [...activeChanges(false), ...regenerateChanges('2026-05-01T10:00:00.000Z')];
    expect(await patcher.edit(CONNECTOR, changes)).toEqual({
      ok: true,
      where: 'Connector acme/gateway (kubectl -n acme get connector gateway -o yaml)',
    });
    expect(requests).toEqual([
      {
        group: 'acl.policyagent.dev',
        version: 'v1alpha1',
        namespace: 'acme',
        plural: 'connectors',
        name: 'gateway',
        body: { spec: { active: false }, metadata: { annotations: { 'acl.policyagent.dev/regenerate': '2026-05-01T10:00:00.000Z' } } },
      },
    ]);
  });

  it('sends nothing for a change no action makes, nor for a Secret', async () => {
    const { patcher, requests } = patcherWith();
    expect(await patcher.edit(CONNECTOR, [{ path: ['metadata', 'name'], value: 'other' }])).toEqual({
      ok: false,
      status: 422,
      message: 'Connector/acme/gateway was not changed: an action may set a field of spec or an annotation, not "metadata.name".',
    });
    expect(await patcher.edit({ kind: 'Secret', namespace: 'acme', name: 'api-key' }, activeChanges(true))).toMatchObject({
      ok: false,
      status: 422,
    });
    expect(requests).toEqual([]);
  });

  it("answers the API server's refusals with its sentence and a status a person can act on", async () => {
    const outcome = async (code: number, message: string) =>
      patcherWith({ code, body: JSON.stringify({ kind: 'Status', message }) }).patcher.edit(CONNECTOR, activeChanges(false));
    expect(await outcome(409, 'the object has been modified')).toEqual({
      ok: false,
      status: 409,
      message: 'Connector acme/gateway was changed by someone else at the same moment: the object has been modified. Try again.',
    });
    expect(await outcome(400, 'bad patch')).toEqual({
      ok: false,
      status: 422,
      message: 'The API server refused the change to Connector acme/gateway: bad patch.',
    });
    expect(await outcome(503, 'etcd unavailable')).toEqual({
      ok: false,
      status: 500,
      message: 'The API server did not take the change to Connector acme/gateway: etcd unavailable.',
    });
  });
});
