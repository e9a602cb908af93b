import { describe, expect, it } from 'vitest';
import { freezeNormalized } from './normalize.ts';
import { SHARED_STRING_MAX_LENGTH, StringTable } from './strings.ts';

/** A table that records what it was asked to share (string identity cannot be observed in JS). */
class RecordingTable extends StringTable {
  readonly asked: string[] = [];
  override share(s: string): string {
    this.asked.push(s);
    return super.share(s);
  }
}

describe('StringTable', () => {
  it('keeps one entry per distinct short string and hands the same value back', () => {
    const t = new StringTable();
    expect(t.share('fp7')).toBe('fp7');
    expect(t.share(['f', 'p', '7'].join(''))).toBe('fp7');
    expect(t.share('Succeeded')).toBe('Succeeded');
    expect(t.size).toBe(2);
  });

  it('leaves long strings out of the table', () => {
    const t = new StringTable();
    const long = 'm'.repeat(SHARED_STRING_MAX_LENGTH + 1);
    expect(t.share(long)).toBe(long);
    expect(t.share('m'.repeat(SHARED_STRING_MAX_LENGTH))).toHaveLength(SHARED_STRING_MAX_LENGTH);
    expect(t.size).toBe(1);
  });

  it('starts afresh when full, so unique strings never pile up', () => {
    const t = new StringTable(3);
    for (const s of ['a', 'b', 'c']) t.share(s);
    expect(t.size).toBe(3);
    t.share('d');
    expect(t.size).toBe(1);
    t.share('a');
    expect(t.size).toBe(2);
  });
});

describe('freezeNormalized with a string table', () => {
  it('passes every string value, in objects and lists, through the table and changes nothing else', () => {
    const t = new RecordingTable();
    const obj = {
      metadata: { name: 'done7', namespace: 'fp7', labels: { tier: 'db' } },
      spec: { command: ['sh', '-c', 'true'], replicas: 2, on: true },
      status: { conditions: [{ type: 'Succeeded', status: 'True', at: new Date('2025-01-01T00:00:00Z') }] },
    };
    const out = freezeNormalized(obj, t);
    expect(t.asked.sort()).toEqual(['-c', 'Succeeded', 'True', 'db', 'done7', 'fp7', 'sh', 'true']);
    expect(out).toEqual({
      metadata: { name: 'done7', namespace: 'fp7', labels: { tier: 'db' } },
      spec: { command: ['sh', '-c', 'true'], replicas: 2, on: true },
      status: { conditions: [{ type: 'Succeeded', status: 'True', at: '2025-01-01T00:00:00Z' }] },
    });
    expect(Object.isFrozen(out.spec.command)).toBe(true);
  });
});
