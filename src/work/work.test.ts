import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPackingThread, createThreadPacker, IN_THREAD_PACKER } from '../bundle/index.ts';
import { createReadingThread, createThreadReader } from '../standalone/index.ts';
import { createSlicer, drive, UNSLICED } from './slice.ts';

// The packing thread (bundle/) and the reading thread (standalone/), each its own entry script.
const thread = createPackingThread();
const reading = createReadingThread();
afterAll(async () => {
  await thread.close();
  await reading.close();
});

describe('the background thread', () => {
  it('packs and hashes exactly as this thread does', async () => {
    const packer = createThreadPacker(thread, 0);
    const rego = `package acl\n\n${Array.from({ length: 2000 }, (_, i) => `# rule ${i} é ☃\nallow if { input.x == ${i} }`).join('\n\n')}\n`;
    const manifest = '{"revision":"7","roots":["acl"]}\n';
    const there = await packer.pack(manifest, rego);
    const here = await IN_THREAD_PACKER.pack(manifest, rego);
    expect(Buffer.from(there.bytes).equals(Buffer.from(here.bytes))).toBe(true);
    expect(there.hex).toBe(here.hex);
    expect(await packer.hash(rego)).toBe(await IN_THREAD_PACKER.hash(rego));
  });

  it('takes the text as parts, and packs what it hashed without the text being sent again', async () => {
    const packer = createThreadPacker(thread, 0);
    const parts = Array.from({ length: 300 }, (_, i) => `# rule ${i}\nallow if { input.x == ${i} }\n\n`);
    const manifest = '{"revision":"8"}\n';
    const hex = await packer.hash(parts);
    expect(hex).toBe(await IN_THREAD_PACKER.hash(parts.join('')));
    const packed = await packer.pack(manifest, parts);
    expect(Buffer.from(packed.bytes).equals(Buffer.from((await IN_THREAD_PACKER.pack(manifest, parts.join(''))).bytes))).toBe(true);
    // A thread started again holds nothing: the text is sent.
    await thread.close();
    expect((await packer.pack(manifest, parts)).hex).toBe(packed.hex);
  });

  it('reads a manifest file and sends its objects in parts; a missing file is an error, and the thread goes on', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acl-work-'));
    try {
      const doc = (i: number): string =>
        `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata: { name: c${i}, namespace: acme }\nspec: {}\n`;
      await writeFile(join(dir, 'many.yaml'), Array.from({ length: 450 }, (_, i) => doc(i)).join('---\n'));
      const reader = createThreadReader(reading, { maxBytes: 1 << 20, maxDocuments: 1000 });
      const got = await reader.read(join(dir, 'many.yaml'), 'many.yaml');
      expect(got.objects.map((o) => o.object.metadata.name)).toEqual(Array.from({ length: 450 }, (_, i) => `c${i}`));
      expect(got.objects[449]?.object.document).toBe(450);
      expect(got.read).toMatchObject({ objects: 450, documents: 450, unreadable: false, changing: false, problems: [] });
      await expect(reader.read(join(dir, 'missing.yaml'), 'missing.yaml')).rejects.toThrow(/ENOENT/);
      // An edit sends only the edited document: the others are the very objects received before.
      await writeFile(
        join(dir, 'many.yaml'),
        Array.from({ length: 450 }, (_, i) => (i === 7 ? doc(i).replace('spec: {}', 'spec: { revoked: true }') : doc(i))).join('---\n'),
      );
      const again = await reader.read(join(dir, 'many.yaml'), 'many.yaml');
      expect(again.objects).toHaveLength(450);
      expect(again.objects.filter((o, i) => o === got.objects[i])).toHaveLength(449);
      expect(again.objects[7]?.object.raw['spec']).toEqual({ revoked: true });
      // A document inserted first shifts the numbers of the rest, which are still not sent again.
      await writeFile(join(dir, 'many.yaml'), [doc(1000), ...Array.from({ length: 450 }, (_, i) => doc(i))].join('---\n'));
      const shifted = await reader.read(join(dir, 'many.yaml'), 'many.yaml');
      expect(shifted.objects.map((o) => [o.object.metadata.name, o.object.document])).toEqual([
        ['c1000', 1],
        ...Array.from({ length: 450 }, (_, i) => [`c${i}`, i + 2]),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('slicing', () => {
  function* count(n: number): Generator<void, number> {
    let total = 0;
    for (let i = 0; i < n; i++) {
      total += i;
      yield;
    }
    return total;
  }

  it('gives the event loop back while a long computation runs, with the same result', async () => {
    let turns = 0;
    let ticking = true;
    const tick = (): void => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    expect(await drive(count(50), createSlicer(0))).toBe(1225);
    ticking = false;
    // Other callbacks ran between the steps: with a budget of 0, every step gives the loop back.
    expect(turns).toBeGreaterThanOrEqual(40);
    expect(await drive(count(50), UNSLICED)).toBe(1225);
  });
});

describe('a background thread that fails', () => {
  it('fails a request it cannot send on its own and goes on; a closed thread starts again', async () => {
    const t = createPackingThread();
    try {
      await expect(t.run({ kind: 'hash', text: (() => 'x') as unknown as string })).rejects.toThrow(/could not be cloned/);
      expect(await t.run({ kind: 'hash', text: 'abc' })).toEqual({
        kind: 'hash',
        hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      });
      await t.close();
      expect(await t.run({ kind: 'hash', text: 'abc' })).toMatchObject({ kind: 'hash' });
    } finally {
      await t.close();
    }
  });
});
