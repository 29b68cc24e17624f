import { describe, expect, it } from 'vitest';
import { createUploadGate } from './gate.ts';

describe('the upload gate', () => {
  it('holds at most so many uploads, and takes another once one is given back', () => {
    const gate = createUploadGate(2, 1000);
    const a = gate.enter(0);
    const b = gate.enter(0);
    expect(a && b).toBeTruthy();
    expect(gate.enter(0)).toBeUndefined();
    a?.release();
    a?.release();
    expect(gate.enter(0)).toBeDefined();
    expect(gate.enter(0)).toBeUndefined();
  });

  it('counts what uploads declare and what they send, whichever is more, against the bytes held', () => {
    const gate = createUploadGate(10, 1000);
    const declared = gate.enter(600);
    expect(gate.enter(500)).toBeUndefined();
    const streaming = gate.enter(0);
    expect(streaming?.hold(300)).toBe(true);
    expect(declared?.hold(600)).toBe(true);
    expect(streaming?.hold(200)).toBe(false);
    streaming?.release();
    declared?.release();
    expect(gate.enter(1000)).toBeDefined();
  });
});
