import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitForBuild } from './built.ts';

describe('waitForBuild (the engines’ tools built in the background by hack/test.sh)', () => {
  let dir: string;
  let rcFile: string;
  let logFile: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vws-engines-build-'));
    rcFile = join(dir, 'engines-build.rc');
    logFile = join(dir, 'engines-build.log');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('waits until the exit code is written, and goes on when it is 0', async () => {
    const lines: string[] = [];
    let done = false;
    const waiting = waitForBuild({
      rcFile,
      logFile,
      log: (l) => lines.push(l),
      pollMs: 5,
      sayEveryMs: 0,
    }).then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toBe(false);
    expect(lines.some((l) => l.startsWith("waiting for the engines' tools"))).toBe(true);
    writeFileSync(rcFile, '0\n');
    await waiting;
    expect(done).toBe(true);
    expect(lines.at(-1)).toMatch(/^the engines' tools are built \(waited \d+ s\)$/);
  });

  it('a failed build: rejects with its exit code, the command to run and the log’s last lines', async () => {
    writeFileSync(logFile, `${Array.from({ length: 60 }, (_, i) => `line ${i}`).join('\n')}\n`);
    writeFileSync(rcFile, '2\n');
    const err = await waitForBuild({ rcFile, logFile, pollMs: 5 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain("building the engines' tools failed (exit code 2; log: ");
    expect(message).toContain('run `hack/build-tools.sh engines` to see why');
    expect(message).toContain('line 59');
    expect(message).not.toContain('line 10\n');
  });
});
