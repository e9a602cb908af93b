import { describe, expect, it } from 'vitest';
import { formatGoDuration, parseGoDuration, parsePositiveDuration } from './duration.ts';
import {
  type MaintenanceWindow,
  START_SEARCH_LIMIT,
  startWindow,
  validateWindow,
  windowState,
} from './window.ts';

const at = (iso: string) => new Date(iso);
const H = 3_600_000;
const M = 60_000;

describe('parseGoDuration', () => {
  it.each([
    ['2h30m', 2.5 * H],
    ['90m', 90 * M],
    ['1.5h', 1.5 * H],
    ['1h0m0s', H],
    ['45s', 45_000],
    ['300ms', 300],
    ['1.h', H],
    ['.5h', 0.5 * H],
    ['1us', 0.001],
    ['1µs', 0.001],
    ['2000000ns', 2],
    ['0', 0],
    ['-1h', -H],
    ['+15m', 15 * M],
  ])('%s', (input, ms) => {
    expect(parseGoDuration(input)).toBeCloseTo(ms, 9);
  });

  it.each([
    ['', /empty/],
    ['-', /empty/],
    ['2', /missing unit after "2"/],
    ['h', /unexpected "h"/],
    ['2x', /unexpected "2x"/],
    ['1h 30m', /unexpected " 30m"/],
    ['1h30', /missing unit after "30"/],
    ['.h', /unexpected/],
    ['1d', /unexpected "1d"/],
    ['--1h', /unexpected/],
  ])('rejects %j', (input, message) => {
    expect(() => parseGoDuration(input)).toThrow(message);
  });

  it('parsePositiveDuration refuses zero and negatives', () => {
    expect(parsePositiveDuration('2h')).toEqual({ ok: true, ms: 2 * H });
    expect(parsePositiveDuration('0')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/greater than zero/),
    });
    expect(parsePositiveDuration('-5m')).toMatchObject({ ok: false });
    expect(parsePositiveDuration('soon')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/invalid duration/),
    });
  });
});

/** Saturdays 02:00–06:00 Berlin time unless overridden. */
function win(overrides: Partial<MaintenanceWindow> = {}): MaintenanceWindow {
  return { schedule: '0 2 * * 6', duration: '4h', timeZone: 'Europe/Berlin', ...overrides };
}

describe('windowState', () => {
  // 2025-06-07 is a Saturday; Berlin is UTC+2 in summer, so the window is 00:00Z–04:00Z.
  it('closed before it opens: when it opens and closes', () => {
    expect(windowState(win(), at('2025-06-06T12:00:00Z'))).toEqual({
      open: false,
      opensAt: at('2025-06-07T00:00:00Z'),
      closesAt: at('2025-06-07T04:00:00Z'),
    });
  });

  it('open from the opening instant to just before the close', () => {
    expect(windowState(win(), at('2025-06-07T00:00:00Z'))).toEqual({
      open: true,
      opensAt: at('2025-06-07T00:00:00Z'),
      closesAt: at('2025-06-07T04:00:00Z'),
    });
    expect(windowState(win(), at('2025-06-07T03:59:59.999Z')).open).toBe(true);
  });

  it('closed at the closing instant; the next opening is a week later', () => {
    expect(windowState(win(), at('2025-06-07T04:00:00Z'))).toEqual({
      open: false,
      opensAt: at('2025-06-14T00:00:00Z'),
      closesAt: at('2025-06-14T04:00:00Z'),
    });
  });

  it('follows the zone across DST (winter opening is an hour later in UTC)', () => {
    expect(windowState(win(), at('2025-12-01T00:00:00Z')).opensAt).toEqual(at('2025-12-06T01:00:00Z'));
  });

  it('a window whose opening falls in a DST gap opens when the gap ends', () => {
    // New York 2025-03-09: 02:30 does not exist; it opens at 03:00 EDT (07:00Z) and lasts 1h.
    const w = win({ schedule: '30 2 * * *', duration: '1h', timeZone: 'America/New_York' });
    expect(windowState(w, at('2025-03-09T06:59:00Z'))).toEqual({
      open: false,
      opensAt: at('2025-03-09T07:00:00Z'),
      closesAt: at('2025-03-09T08:00:00Z'),
    });
  });

  it('overlapping or touching openings merge into one window', () => {
    const w = win({ schedule: '0 0,1 * * *', duration: '90m', timeZone: 'UTC' });
    expect(windowState(w, at('2025-06-07T00:30:00Z'))).toEqual({
      open: true,
      opensAt: at('2025-06-07T00:00:00Z'),
      closesAt: at('2025-06-07T02:30:00Z'),
    });
    const touching = win({ schedule: '0 0,1 * * *', duration: '1h', timeZone: 'UTC' });
    expect(windowState(touching, at('2025-06-06T23:00:00Z')).closesAt).toEqual(at('2025-06-07T02:00:00Z'));
  });

  it('a window that never closes has no closesAt', () => {
    expect(
      windowState(
        win({ schedule: '0 * * * *', duration: '2h', timeZone: 'UTC' }),
        at('2025-06-07T00:30:00Z'),
      ),
    ).toEqual(
      // opensAt: the earliest opening still holding the window open (23:00, two hours back).
      { open: true, opensAt: at('2025-06-06T23:00:00Z') },
    );
  });

  it('throws on an invalid window', () => {
    expect(() => windowState(win({ duration: '0' }), at('2025-06-07T00:00:00Z'))).toThrow(
      /greater than zero/,
    );
    expect(() => windowState(win({ schedule: 'nope' }), at('2025-06-07T00:00:00Z'))).toThrow(/1 field/);
  });
});

describe('startWindow (expected duration)', () => {
  // Saturdays 00:00Z–04:00Z in June (02:00–06:00 Berlin).
  it('without an expected duration: exactly while the window is open', () => {
    expect(startWindow(win(), at('2025-06-07T03:59:00Z'))).toEqual({ ok: true });
    expect(startWindow(win(), at('2025-06-06T12:00:00Z'))).toEqual({
      ok: false,
      wakeAt: at('2025-06-07T00:00:00Z'),
    });
  });

  it('starts while at least the expected duration is left, the boundary included', () => {
    expect(startWindow(win(), at('2025-06-07T00:00:00Z'), H)).toEqual({ ok: true });
    expect(startWindow(win(), at('2025-06-07T03:00:00Z'), H)).toEqual({ ok: true });
  });

  it('not in the last minutes: waits for the next window, saying when this one closes', () => {
    expect(startWindow(win(), at('2025-06-07T03:00:00.001Z'), H)).toEqual({
      ok: false,
      wakeAt: at('2025-06-14T00:00:00Z'),
      closesAt: at('2025-06-07T04:00:00Z'),
    });
  });

  it('skips windows too short for it (merged ones count as one)', () => {
    // Monday and Tuesday openings touch: Mon 00:00 to Wed 00:00 (48h); Friday's is 24h.
    const w = win({ schedule: '0 0 * * 1,2,5', duration: '24h', timeZone: 'UTC' });
    const thursday = at('2025-06-05T12:00:00Z');
    expect(startWindow(w, thursday, 24 * H)).toEqual({ ok: false, wakeAt: at('2025-06-06T00:00:00Z') });
    expect(startWindow(w, thursday, 36 * H)).toEqual({ ok: false, wakeAt: at('2025-06-09T00:00:00Z') });
    // Inside Friday's window with 12h left: the next one with 36h of room is Monday's.
    expect(startWindow(w, at('2025-06-06T12:00:00Z'), 36 * H)).toEqual({
      ok: false,
      wakeAt: at('2025-06-09T00:00:00Z'),
      closesAt: at('2025-06-07T00:00:00Z'),
    });
  });

  it('no window is ever long enough: no wake-up', () => {
    expect(startWindow(win(), at('2025-06-06T12:00:00Z'), 5 * H)).toEqual({ ok: false });
    expect(startWindow(win(), at('2025-06-07T01:00:00Z'), 5 * H)).toEqual({
      ok: false,
      closesAt: at('2025-06-07T04:00:00Z'),
    });
    expect(START_SEARCH_LIMIT).toBeGreaterThan(52);
  });

  it('a window that never closes always has room', () => {
    const always = win({ schedule: '0 * * * *', duration: '2h', timeZone: 'UTC' });
    expect(startWindow(always, at('2025-06-07T00:30:00Z'), 100 * H)).toEqual({ ok: true });
  });
});

describe('formatGoDuration', () => {
  it.each([
    [90 * M, '1h30m'],
    [H, '1h'],
    [45_000, '45s'],
    [H + 5_000, '1h5s'],
    [0, '0s'],
    [-15 * M, '-15m'],
  ])('%d ms', (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });
});

describe('validateWindow', () => {
  it('accepts a good window and names the bad field', () => {
    expect(validateWindow(win())).toEqual({ ok: true });
    expect(validateWindow(win({ timeZone: undefined }))).toEqual({ ok: true });
    expect(validateWindow(win({ duration: '4 hours' }))).toMatchObject({ ok: false, field: 'duration' });
    expect(validateWindow(win({ duration: '-1h' }))).toMatchObject({ ok: false, field: 'duration' });
    expect(validateWindow(win({ timeZone: 'Europe/Atlantis' }))).toMatchObject({
      ok: false,
      field: 'timeZone',
    });
    expect(validateWindow(win({ schedule: '0 2 * * * *' }))).toMatchObject({ ok: false, field: 'schedule' });
  });
});
