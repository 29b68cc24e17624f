import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, FLAG_NAMES, FLAGS, type Flag } from './flags.ts';

const SERVICE_DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'service.md'), 'utf8');

/** A value people can read a default as: a string or a number (a switch is simply off). */
const statedDefault = (value: unknown): string | undefined =>
  typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;

describe('the flags table', () => {
  it.each(FLAG_NAMES)('--%s states its default in its help exactly when it has one', (name) => {
    const flag: Flag = FLAGS[name];
    expect(flag.help.join('\n').includes('{default}')).toBe(statedDefault(DEFAULTS[name]) !== undefined);
  });

  it.each(FLAG_NAMES)('--%s is in the flag tables of docs/service.md with its variable and default', (name) => {
    const flag: Flag = FLAGS[name];
    const usage = flag.arg === undefined ? `\`--${name}\`` : `\`--${name} ${flag.arg}\``;
    const row = SERVICE_DOC.split('\n').find((line) => line.startsWith('| ') && line.split(' | ')[0]?.includes(usage));
    const [, variable, fallback] = (row ?? '').split(' | ');
    expect(variable).toContain(flag.arg === undefined ? `\`${flag.env}=true\`` : `\`${flag.env}\``);
    const stated = statedDefault(DEFAULTS[name]);
    if (stated !== undefined) expect(fallback).toBe(`\`${stated}\``);
  });
});
