import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { configFromFlags } from '../config.ts';
import { createBase } from './core.ts';

describe('the clock a mode hands to the API', () => {
  it('is Date.now itself when no clock is given, so a decision reads the time without making a Date', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acl-core-'));
    const config = configFromFlags(['--manifests', dir, '--state-dir', join(dir, 'state'), '--insecure-http', '--log-level', 'silent']);
    const base = createBase(config, { log: pino({ level: 'silent' }) }, 'starting');
    try {
      expect(base.nowMs).toBe(Date.now);
    } finally {
      await base.fleet.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a given clock in milliseconds', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acl-core-'));
    const config = configFromFlags(['--manifests', dir, '--state-dir', join(dir, 'state'), '--insecure-http', '--log-level', 'silent']);
    const base = createBase(config, { log: pino({ level: 'silent' }), now: () => new Date(1_700_000_000_123) }, 'starting');
    try {
      expect(base.nowMs()).toBe(1_700_000_000_123);
    } finally {
      await base.fleet.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
