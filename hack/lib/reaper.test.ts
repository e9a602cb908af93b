import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';

const REAPER = join(import.meta.dirname, 'reaper.sh');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function eventually(cond: () => boolean, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(100);
  }
  return cond();
}

describe('reaper.sh', () => {
  it('kills the command when its parent is SIGKILLed', async () => {
    // parent: a shell that starts the reaper (with itself as parent) and prints the command's pid
    const parent = spawn('bash', ['-c', `${REAPER} $$ bash -c 'echo $$; exec sleep 600' & wait`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = await new Promise<number>((ok) =>
      parent.stdout.once('data', (d: Buffer) => ok(Number(String(d).trim()))),
    );
    expect(alive(pid)).toBe(true);
    parent.kill('SIGKILL');
    expect(await eventually(() => !alive(pid))).toBe(true);
  });

  it('stops the command when the reaper gets SIGTERM', async () => {
    const reaper = spawn(REAPER, [String(process.pid), 'bash', '-c', 'echo $$; exec sleep 600'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = await new Promise<number>((ok) =>
      reaper.stdout.once('data', (d: Buffer) => ok(Number(String(d).trim()))),
    );
    const exited = new Promise<unknown>((ok) => reaper.on('exit', ok));
    reaper.kill('SIGTERM');
    await exited;
    expect(await eventually(() => !alive(pid))).toBe(true);
  });

  it('exits with the command status', () => {
    const out = execFileSync('bash', ['-c', `${REAPER} $$ bash -c 'exit 7'; echo "rc=$?"`], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('rc=7');
  });
});
