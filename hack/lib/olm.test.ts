import { describe, expect, it } from 'vitest';
import { withResolvConf } from './olm.ts';

describe('withResolvConf', () => {
  it('runs the command as is without a resolv.conf', () => {
    expect(withResolvConf(undefined, '/bin/catalog', ['--namespace', 'olm'])).toEqual([
      '/bin/catalog',
      ['--namespace', 'olm'],
    ]);
  });

  it('runs it in a private mount namespace with the file over /etc/resolv.conf, arguments intact', () => {
    const [cmd, args] = withResolvConf('/w/resolv.conf', '/bin/catalog', ['--util-image', 'a b']);
    expect(cmd).toBe('unshare');
    expect(args.slice(0, 2)).toEqual(['--mount', 'sh']);
    expect(args[3]).toContain('mount --bind "$1" /etc/resolv.conf');
    // $0 and $1 of the script, then the command and its arguments, never re-split by the shell.
    expect(args.slice(4)).toEqual(['sh', '/w/resolv.conf', '/bin/catalog', '--util-image', 'a b']);
  });
});
