import { describe, expect, it } from 'vitest';
import { bounded, printable, printableLine } from './printable.ts';

describe('printable', () => {
  it('removes ESC/CSI/OSC introducers, C1 controls, DEL and bidi overrides, keeping newlines and tabs', () => {
    const s = 'a\u001b]0;title\u0007b\u001b[2Jc\u009bd\u007fe\u202ef\u2066g\n\th';
    expect(printable(s)).toBe('a]0;titleb[2Jcdefg\n\th');
  });
  it('makes one line of a multi-line message', () => {
    expect(printableLine('one\r\ntwo\tthree')).toBe('one two three');
  });
  it('bounds a long message and says how much was cut', () => {
    expect(bounded('x'.repeat(10), 4)).toBe('xxxx… (6 more characters cut)');
    expect(bounded('short', 10)).toBe('short');
  });
});
