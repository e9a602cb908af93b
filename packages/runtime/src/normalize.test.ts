import { V1MicroTime } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { formatMicroTime, formatTime, freezeNormalized, normalizeTimestamps } from './normalize.ts';

describe('timestamps', () => {
  it('formats metav1.Time at second precision and MicroTime with six digits', () => {
    const t = Date.UTC(2025, 2, 1, 10, 0, 5, 250);
    expect(formatTime(t)).toBe('2025-03-01T10:00:05Z');
    expect(formatMicroTime(t)).toBe('2025-03-01T10:00:05.250000Z');
  });

  it('replaces Dates anywhere in an object with the strings the API server sends, leaving the input alone', () => {
    const input = {
      metadata: { creationTimestamp: new Date('2025-03-01T10:00:00Z'), name: 'x' },
      status: {
        conditions: [{ lastTransitionTime: new Date('2025-03-01T11:00:00Z') }],
        at: new Date('2025-03-01T11:00:00.123Z'),
      },
      spec: {
        renewTime: new V1MicroTime('2025-03-01T11:00:00.123456Z'),
        n: 1,
        s: 'a',
        nil: null,
        skip: undefined,
      },
    };
    const out = normalizeTimestamps(input) as unknown as Record<string, Record<string, unknown>>;
    expect(out.metadata).toEqual({ creationTimestamp: '2025-03-01T10:00:00Z', name: 'x' });
    expect(out.status).toEqual({
      conditions: [{ lastTransitionTime: '2025-03-01T11:00:00Z' }],
      at: '2025-03-01T11:00:00.123Z',
    });
    expect(out.spec!.renewTime).toMatch(/^2025-03-01T11:00:00\.123\d{3}Z$/);
    expect(out.spec).not.toHaveProperty('skip');
    expect(input.metadata.creationTimestamp).toBeInstanceOf(Date);
  });
});

describe('objects as deep as the API server stores', () => {
  // Its JSON decoder stops at 10,000 levels: a Custom Resource's free-form field (an Operation's
  // spec.parameters, stored where the webhook did not run) may come 9,992 levels deep, and a recursive
  // walk ran out of stack on it in the informer, whose list and watch then failed for every object.
  const DEPTH = 10_000;
  const deep = () => {
    let v: Record<string, unknown> = { at: new Date('2025-03-01T10:00:00Z'), skip: undefined };
    for (let i = 0; i < DEPTH; i++) v = { x: v, n: [i] };
    return v;
  };
  const bottom = (v: Record<string, unknown>) => {
    let cur = v;
    for (let i = 0; i < DEPTH; i++) cur = cur.x as Record<string, unknown>;
    return cur;
  };

  it('freezeNormalized freezes every level and normalises the deepest', () => {
    const v = freezeNormalized(deep());
    expect(Object.isFrozen(v)).toBe(true);
    expect(Object.isFrozen(v.n)).toBe(true);
    const last = bottom(v);
    expect(Object.isFrozen(last)).toBe(true);
    expect(last).toEqual({ at: '2025-03-01T10:00:00Z' });
    expect(Object.keys(v)).toEqual(['x', 'n']);
  });

  it('normalizeTimestamps copies every level, keeping key order, and leaves the input alone', () => {
    const input = deep();
    const v = normalizeTimestamps(input);
    expect(bottom(v)).toEqual({ at: '2025-03-01T10:00:00Z' });
    expect(Object.keys(v)).toEqual(['x', 'n']);
    expect(v.n).toEqual([DEPTH - 1]);
    expect(bottom(input).at).toBeInstanceOf(Date);
  });
});
