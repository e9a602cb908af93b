import { describe, expect, it } from 'vitest';
import { HOUR, ZoneRules } from './tz.ts';

const wall = (s: string) => Date.parse(`${s}:00Z`); // a local wall time as naive ms
const iso = (t: number) => new Date(t).toISOString();

describe('ZoneRules', () => {
  const ny = new ZoneRules('America/New_York');

  it('finds the transitions of a year, to the second', () => {
    expect(ny.transitionsBetween(Date.UTC(2025, 0, 1), Date.UTC(2026, 0, 1))).toEqual([
      { at: Date.parse('2025-03-09T07:00:00Z'), before: -5 * HOUR, after: -4 * HOUR },
      { at: Date.parse('2025-11-02T06:00:00Z'), before: -4 * HOUR, after: -5 * HOUR },
    ]);
  });

  it('reads offsets on both sides of a transition', () => {
    expect(ny.offsetAt(Date.parse('2025-03-09T06:59:59Z'))).toBe(-5 * HOUR);
    expect(ny.offsetAt(Date.parse('2025-03-09T07:00:00Z'))).toBe(-4 * HOUR);
    expect(iso(ny.wallAt(Date.parse('2025-03-09T07:00:00Z')))).toBe('2025-03-09T03:00:00.000Z');
  });

  it('resolves wall times: one instant, none (gap, with its end), or two (overlap)', () => {
    expect(ny.resolve(wall('2025-06-01T12:00')).instants.map(iso)).toEqual(['2025-06-01T16:00:00.000Z']);
    const gap = ny.resolve(wall('2025-03-09T02:30'));
    expect(gap.instants).toEqual([]);
    expect(iso(gap.gapEnd!)).toBe('2025-03-09T07:00:00.000Z');
    expect(ny.resolve(wall('2025-11-02T01:30')).instants.map(iso)).toEqual([
      '2025-11-02T05:30:00.000Z',
      '2025-11-02T06:30:00.000Z',
    ]);
    // The edges: 03:00 is the first wall time after the gap; 01:00–01:59 occur twice, 00:59 and 02:00 once.
    expect(ny.resolve(wall('2025-03-09T03:00')).instants.map(iso)).toEqual(['2025-03-09T07:00:00.000Z']);
    expect(ny.resolve(wall('2025-11-02T00:59')).instants).toHaveLength(1);
    expect(ny.resolve(wall('2025-11-02T01:00')).instants).toHaveLength(2);
    expect(ny.resolve(wall('2025-11-02T02:00')).instants).toHaveLength(1);
  });

  it('handles half-hour offsets and zones without DST', () => {
    const lh = new ZoneRules('Australia/Lord_Howe');
    expect(lh.offsetAt(Date.parse('2025-01-01T00:00:00Z'))).toBe(11 * HOUR);
    expect(lh.offsetAt(Date.parse('2025-07-01T00:00:00Z'))).toBe(10.5 * HOUR);
    const kolkata = new ZoneRules('Asia/Kolkata');
    expect(kolkata.transitionsBetween(Date.UTC(2000, 0, 1), Date.UTC(2030, 0, 1))).toEqual([]);
    expect(kolkata.offsetAt(Date.parse('2025-01-01T00:00:00Z'))).toBe(5.5 * HOUR);
  });

  it('resolves across a year boundary', () => {
    // Santiago is on summer time (−03) at New Year; a wall time just after midnight maps to 03:xxZ.
    const scl = new ZoneRules('America/Santiago');
    expect(scl.resolve(wall('2026-01-01T00:30')).instants.map(iso)).toEqual(['2026-01-01T03:30:00.000Z']);
    expect(scl.resolve(wall('2025-12-31T23:30')).instants.map(iso)).toEqual(['2026-01-01T02:30:00.000Z']);
  });
});
