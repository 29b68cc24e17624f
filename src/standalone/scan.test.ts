import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { rng } from '../../test/support/corpus.ts';
import { keyText, type ObjectKey } from '../controller/index.ts';
import { createThreadReader, DEFAULT_MANIFEST_LIMITS } from './reader.ts';
import { createReadingThread } from './reading.ts';
import { createFolderSource, type FolderSource } from './source.ts';
import { openStateFolder } from './state.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'acl-scan-'));
});
afterEach(async () => {
  vi.useRealTimers();
  await rm(root, { recursive: true, force: true });
});

const rule = (name: string, n: number, tenant = 'acme'): string =>
  `apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: ${name}, namespace: ${tenant}${n % 3 === 0 ? `, labels: { v: "${n}" }` : ''} }
spec: { state: Enforced, subjectType: user, actions: [read], resourceType: doc, condition: 'principal.n != ${n % 5}' }
`;
const key = (name: string, n: number): string =>
  `apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: acme, labels: { acl.policyagent.dev/api-key: "true" } }
stringData: { token: key-${n} }
`;

/** A source over `dir` with the clock `now`, recording what it enqueues. */
function sourceOver(dir: string, state: string, now: () => number, alwaysWhole: boolean): { source: FolderSource; enqueued: string[] } {
  const enqueued: string[] = [];
  const source = createFolderSource({
    dir,
    state: openStateFolder(state),
    log: pino({ level: 'silent' }),
    enqueue: (k: ObjectKey) => enqueued.push(keyText(k)),
    reader: createThreadReader(createReadingThread(true), DEFAULT_MANIFEST_LIMITS),
    clock: now,
    settleMs: 300,
    confirmDeleteMs: 1000,
    racyWindowMs: 0,
    alwaysWhole,
  });
  return { source, enqueued };
}

/** What a source holds, as the controllers read it, in key order. */
function heldOf(s: FolderSource): unknown[] {
  const all = (['Secret', 'Connector', 'Directory', 'Rule', 'Bundle'] as const).flatMap((kind) => s.list(kind));
  return all
    .map((o) => {
      const k: ObjectKey = { kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name };
      return { key: keyText(k), raw: o.raw, origin: s.origin(k) };
    })
    .sort((a, b) => (a.key < b.key ? -1 : 1));
}

describe('a scan that keeps the view when no file changed', () => {
  it('holds, enqueues and reports exactly what a scan over every object does, over 300 random edits in a row', async () => {
    const dir = join(root, 'm');
    await mkdir(dir);
    const random = rng(26);
    const pick = (n: number): number => Math.floor(random() * n);
    // Each file: a list of documents (or broken YAML), rewritten whole on every change.
    const files = new Map<string, string[]>([
      ['a.yaml', [rule('r1', 1), rule('r2', 2), key('k1', 1)]],
      ['b.yaml', [rule('r3', 3), rule('r4', 4)]],
    ]);
    const write = async (name: string): Promise<void> => {
      const docs = files.get(name);
      if (docs) await writeFile(join(dir, name), docs.join('---\n'));
    };
    for (const name of files.keys()) await write(name);
    let nowMs = Date.now();
    const now = (): number => nowMs;
    const fast = sourceOver(dir, join(root, 'fast'), now, false);
    const whole = sourceOver(dir, join(root, 'whole'), now, true);
    await Promise.all([fast.source.start(), whole.source.start()]);
    // Settle and confirm-delete rescans are the test's to make: their timers never fire by themselves.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    let unchangedScans = 0;
    for (let step = 0; step < 300; step++) {
      const names = [...files.keys()];
      const name = names[pick(names.length)] as string;
      const docs = files.get(name) as string[];
      const op = pick(12);
      if (op === 0) docs.push(rule(`r${pick(8)}`, step));
      else if (op === 1 && docs.length > 0) docs.splice(pick(docs.length), 1);
      else if (op === 2 && docs.length > 0) docs[pick(docs.length)] = rule(`r${pick(8)}`, step);
      else if (op === 3) docs.push(key(`k${pick(3)}`, step));
      else if (op === 4) docs.push('kind: [broken');
      else if (op === 5) docs.splice(0, docs.length);
      else if (op === 6 && files.size > 1) {
        files.delete(name);
        await unlink(join(dir, name));
      } else if (op === 7) files.set(`f${pick(4)}.yaml`, [rule(`r${pick(8)}`, step, pick(2) ? 'acme' : 'beta')]);
      else if (op === 8) docs.splice(docs.findIndex((d) => d.startsWith('kind: [broken')) >>> 0, 1);
      // 9-11: nothing written, only time passes (the settling and confirm-delete rescans).
      if (op < 9) for (const n of files.keys()) await write(n);
      nowMs += [50, 350, 1100][pick(3)] as number;
      fast.enqueued.length = 0;
      whole.enqueued.length = 0;
      await fast.source.rescan();
      await whole.source.rescan();
      if (fast.enqueued.length === 0) unchangedScans++;
      expect(heldOf(fast.source), `step ${step}`).toEqual(heldOf(whole.source));
      expect(fast.enqueued.sort(), `step ${step}`).toEqual(whole.enqueued.sort());
      expect(fast.source.problems(), `step ${step}`).toEqual(whole.source.problems());
      expect(fast.source.settling(), `step ${step}`).toEqual(whole.source.settling());
    }
    // Not vacuous: many scans changed nothing (where the view is kept), and many changed something.
    expect(unchangedScans).toBeGreaterThan(50);
    expect(unchangedScans).toBeLessThan(250);
    fast.source.stop();
    whole.source.stop();
  });
});
