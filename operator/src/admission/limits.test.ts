import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  aWatchOperation,
  causesOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import {
  checkParametersLimits,
  MAX_PARAMETERS_BYTES,
  MAX_PARAMETERS_DEPTH,
} from '../catalog/parameters-limits.ts';
import { decideOperation } from './operation.ts';
import { decideScheduler } from './schedules.ts';

/** `{"deep": {"deep": … {}}}`, `levels` objects deep (built without recursion). */
function nested(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) v = { deep: v };
  return v;
}

const huge = () => ({ blob: 'x'.repeat(MAX_PARAMETERS_BYTES) });

describe('parameters size limits', () => {
  it('measures depth and size without recursing, at any depth', () => {
    expect(checkParametersLimits(nested(MAX_PARAMETERS_DEPTH))).toEqual({ ok: true });
    expect(checkParametersLimits(nested(MAX_PARAMETERS_DEPTH + 1))).toMatchObject({
      ok: false,
      limit: 'depth',
    });
    expect(checkParametersLimits(nested(100_000))).toMatchObject({ ok: false, limit: 'depth' });
    expect(checkParametersLimits(huge())).toMatchObject({ ok: false, limit: 'size' });
    expect(checkParametersLimits({ a: [1, 'two', null, true] })).toEqual({ ok: true });
  });

  it.each([
    ['Operation', 'spec.parameters'],
    ['CronOperation', 'spec.operationTemplate.spec.parameters'],
    ['WatchOperation', 'spec.operationTemplate.spec.parameters'],
  ] as const)('refuses deep and huge parameters of a %s at %s, naming the limit', (kind, field) => {
    for (const [parameters, said] of [
      [nested(5_000), `nested more than ${MAX_PARAMETERS_DEPTH} levels deep`],
      [huge(), `larger than ${MAX_PARAMETERS_BYTES} bytes`],
    ] as const) {
      const res =
        kind === 'Operation'
          ? decideOperation(aRequest(anOperation({ parameters })), someFacts())
          : decideScheduler(
              kind,
              aRequest(
                kind === 'CronOperation'
                  ? aCronOperation({}, { parameters })
                  : aWatchOperation({ parameters }),
              ),
              someFacts(),
            );
      const causes = causesOf(res).filter((c) => c.field === field);
      expect(causes).toHaveLength(1);
      expect(causes[0]?.message).toContain(said);
      expect(res.status?.message).not.toContain('RangeError');
    }
  });
});
