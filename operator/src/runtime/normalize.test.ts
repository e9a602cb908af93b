import { V1MicroTime } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { formatMicroTime, formatTime, normalizeTimestamps } from './normalize.ts';

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
