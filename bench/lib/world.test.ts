import { describe, expect, it } from 'vitest';
import { parseResidentSplit } from './world.ts';

describe('parseResidentSplit', () => {
  it('splits VmRSS into anonymous and file-backed (with shared memory) pages', () => {
    const status = [
      'Name:\tnode',
      'VmRSS:\t  1075200 kB',
      'RssAnon:\t  1024000 kB',
      'RssFile:\t    49152 kB',
      'RssShmem:\t     2048 kB',
    ].join('\n');
    expect(parseResidentSplit(status)).toEqual({ anonMiB: 1000, fileMiB: 50 });
  });

  it('reads NaN for a field it cannot find', () => {
    expect(parseResidentSplit('VmRSS:\t1 kB').anonMiB).toBeNaN();
  });
});
