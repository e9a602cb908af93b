import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Starts a node process that installs the handlers and an 'exit' handler (what kills a bench's
 * operators), sends it `signal` once it is waiting, and returns what it printed and how it ended.
 */
async function stopWith(signal: NodeJS.Signals, install: boolean) {
  const module = join(import.meta.dirname, 'stop-signals.ts');
  const script = [
    `const { exitOnStopSignals } = await import(${JSON.stringify(module)});`,
    install ? 'exitOnStopSignals();' : '',
    "process.on('exit', () => process.stdout.write('exit handlers ran\\n'));",
    "process.stdout.write('waiting\\n');",
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let sent = false;
  child.stdout.on('data', (d: Buffer) => {
    out += String(d);
    // Once: a second signal would meet Node's default again (the handlers are `once`).
    if (!sent && out.includes('waiting\n')) sent = child.kill(signal);
  });
  const [code, sig] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { out, code, sig };
}

describe('exitOnStopSignals', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('exits on %s with %i and runs the exit handlers', async (signal, code) => {
    expect(await stopWith(signal, true)).toEqual({ out: 'waiting\nexit handlers ran\n', code, sig: null });
  });

  it('is needed: without it the signal ends the process and no exit handler runs', async () => {
    expect(await stopWith('SIGTERM', false)).toEqual({ out: 'waiting\n', code: null, sig: 'SIGTERM' });
  });
});
