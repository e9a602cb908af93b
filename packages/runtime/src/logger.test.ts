import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { keyOf, objectKey, splitKey } from './keys.ts';
import { createLogger, objectLogger } from './logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, log: createLogger({ destination, level: 'debug' }) };
}

describe('logger', () => {
  it('writes JSON with an ISO time and a string level', () => {
    const { lines, log } = capture();
    log.info({ a: 1 }, 'hello');
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'hello', a: 1 });
    expect(String(lines[0]!.time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('object loggers carry the key, namespace, name and controller on every line', () => {
    const { lines, log } = capture();
    const l = objectLogger(log, 'operation', 'team-a/backup-1', { reconcileID: 'r1' });
    l.info('one');
    l.warn('two');
    objectLogger(log, 'catalog', 'cluster-thing').info('three');
    for (const line of lines.slice(0, 2)) {
      expect(line).toMatchObject({
        controller: 'operation',
        key: 'team-a/backup-1',
        namespace: 'team-a',
        name: 'backup-1',
        reconcileID: 'r1',
      });
    }
    expect(lines[2]).toMatchObject({ controller: 'catalog', key: 'cluster-thing', name: 'cluster-thing' });
    expect(lines[2]).not.toHaveProperty('namespace');
  });

  it("makes an object logger's child on first use only, and it acts as the child", () => {
    const { lines, log } = capture();
    let children = 0;
    const child = log.child;
    // pino's children inherit from their parent: counted for the children of children too.
    log.child = function (this: typeof log, ...args: Parameters<typeof log.child>) {
      children++;
      return child.apply(this, args);
    } as typeof log.child;
    const unused = objectLogger(log, 'operation', 'team-a/backup-1');
    expect(unused).toBeDefined();
    expect(children).toBe(0);
    const l = objectLogger(log, 'operation', 'team-a/backup-2', { reconcileID: 'r2' });
    expect(l.isLevelEnabled('debug')).toBe(true);
    expect(children).toBe(1);
    l.level = 'warn';
    l.info('dropped');
    expect(children).toBe(1);
    l.child({ step: 'apply' }).warn('kept');
    expect(children).toBe(2);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'kept', step: 'apply', name: 'backup-2', reconcileID: 'r2' });
    expect(log.isLevelEnabled('debug')).toBe(true);
  });

  it('redacts secret payloads, tokens and passwords at any usual depth', () => {
    const { lines, log } = capture();
    log.info(
      {
        data: { password: 'p1' },
        secret: { stringData: { key: 's2' }, data: { k: 'czM=' } },
        token: 't4',
        headers: { authorization: 'Bearer t5' },
        obj: { spec: { password: 'p6' } },
      },
      'secrets',
    );
    const text = JSON.stringify(lines[0]);
    for (const leaked of ['p1', 's2', 'czM=', 't4', 'Bearer t5', 'p6']) expect(text).not.toContain(leaked);
    expect(text).toContain('[REDACTED]');
  });

  it('formats keys like client-go', () => {
    expect(keyOf('ns', 'a')).toBe('ns/a');
    expect(keyOf(undefined, 'a')).toBe('a');
    expect(keyOf('', 'a')).toBe('a');
    expect(objectKey({ metadata: { namespace: 'ns', name: 'x' } })).toBe('ns/x');
    expect(() => objectKey({ metadata: {} })).toThrow();
    expect(splitKey('ns/x')).toEqual({ namespace: 'ns', name: 'x' });
    expect(splitKey('x')).toEqual({ name: 'x' });
  });
});
