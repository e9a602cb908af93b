import { describe, expect, it } from 'vitest';
import { longSubjects, subjectOf, tooLong } from './commit-subjects.ts';

describe('commit subjects', () => {
  it('counts characters, not bytes: 72 arrows pass, 73 do not', () => {
    expect(tooLong('→'.repeat(72))).toBe(false);
    expect(tooLong('→'.repeat(73))).toBe(true);
  });

  it("takes a message's first line that is not a git comment", () => {
    expect(subjectOf('# Please enter the commit message\nFix the thing\n\nWhy.')).toBe('Fix the thing');
  });

  it('checks only the commits after the baseline, newest first', () => {
    const long = 'x'.repeat(80);
    const log = [
      { hash: 'c3', subject: long },
      { hash: 'c2', subject: 'short' },
      { hash: 'b1', subject: long },
      { hash: 'a0', subject: long },
    ];
    expect(longSubjects(log, 'b1').map((c) => c.hash)).toEqual(['c3']);
  });

  it('checks a history cut before the baseline whole', () => {
    const log = [
      { hash: 'c3', subject: 'x'.repeat(73) },
      { hash: 'c2', subject: 'x'.repeat(72) },
    ];
    expect(longSubjects(log, 'zz').map((c) => c.hash)).toEqual(['c3']);
  });
});
