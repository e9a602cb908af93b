import { describe, expect, it } from 'vitest';
import { loggedField } from './operator-log.ts';

describe('loggedField', () => {
  const log = [
    'node: a warning that mentions manager starting',
    '{"level":30,"msg":"leader election","ports":{"metrics":1,"probes":2}}',
    '{"level":30,"msg":"manager starting","ports":{"metrics":40001,"probes":40002}}',
    '{"level":30,"msg":"admission webhook serving","port":40003}',
    '{"level":30,"msg":"admission webhook serving","port":1}',
  ].join('\n');

  it('reads the field of the first line whose msg is exactly the message, skipping other output', () => {
    expect(loggedField(log, 'manager starting', 'ports')).toEqual({ metrics: 40001, probes: 40002 });
    expect(loggedField(log, 'admission webhook serving', 'port')).toBe(40003);
  });

  it('is undefined until such a line was logged', () => {
    expect(loggedField(log, 'admission webhook serving', 'ports')).toBeUndefined();
    expect(loggedField('{"msg":"manager st', 'manager starting', 'ports')).toBeUndefined();
  });
});
