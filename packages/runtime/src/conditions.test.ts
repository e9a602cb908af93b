import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Condition,
  type ConditionInput,
  findCondition,
  isFalse,
  isTrue,
  removeCondition,
  setCondition,
} from './conditions.ts';

const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);
const T1 = T0 + 60_000;

function cond(over: Partial<ConditionInput> = {}): ConditionInput {
  return {
    type: 'Ready',
    status: 'True',
    reason: 'AllGood',
    message: 'fine',
    observedGeneration: 1,
    ...over,
  };
}

describe('conditions', () => {
  it('appends a new condition with lastTransitionTime at second precision', () => {
    const out = setCondition(undefined, cond(), T0 + 123);
    expect(out).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'AllGood',
        message: 'fine',
        observedGeneration: 1,
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
    ]);
  });

  it('keeps lastTransitionTime when only reason, message or generation change', () => {
    const a = setCondition(undefined, cond(), T0);
    const b = setCondition(a, cond({ reason: 'StillGood', message: 'other', observedGeneration: 2 }), T1);
    expect(b[0]).toMatchObject({ reason: 'StillGood', message: 'other', observedGeneration: 2 });
    expect(b[0]!.lastTransitionTime).toBe('2025-01-01T00:00:00Z');
  });

  it('moves lastTransitionTime when the status changes', () => {
    const a = setCondition(undefined, cond(), T0);
    const b = setCondition(a, cond({ status: 'False', reason: 'Broken' }), T1);
    expect(b[0]!.lastTransitionTime).toBe('2025-01-01T00:01:00Z');
  });

  it('does not mutate its input and keeps the order of other conditions', () => {
    const a = setCondition(
      setCondition(undefined, cond({ type: 'Accepted' }), T0),
      cond({ type: 'Running' }),
      T0,
    );
    const frozen = structuredClone(a);
    const b = setCondition(a, cond({ type: 'Accepted', status: 'False', reason: 'Nope' }), T1);
    expect(a).toEqual(frozen);
    expect(b.map((c) => c.type)).toEqual(['Accepted', 'Running']);
    expect(removeCondition(b, 'Accepted').map((c) => c.type)).toEqual(['Running']);
  });

  it('find / isTrue / isFalse', () => {
    const cs = setCondition(
      setCondition(undefined, cond(), T0),
      cond({ type: 'Blocked', status: 'False', reason: 'Clear' }),
      T0,
    );
    expect(findCondition(cs, 'Ready')?.reason).toBe('AllGood');
    expect(isTrue(cs, 'Ready')).toBe(true);
    expect(isFalse(cs, 'Blocked')).toBe(true);
    expect(isTrue(cs, 'Missing')).toBe(false);
    expect(isTrue(undefined, 'Ready')).toBe(false);
  });

  it('rejects reasons and types the API server would reject', () => {
    expect(() => setCondition(undefined, cond({ reason: 'not camel case' }), T0)).toThrow(/UpperCamelCase/);
    expect(() => setCondition(undefined, cond({ reason: '' }), T0)).toThrow();
    expect(() => setCondition(undefined, cond({ type: 'bad type' }), T0)).toThrow();
    expect(() => setCondition(undefined, cond({ observedGeneration: -1 }), T0)).toThrow();
  });

  it('property: lastTransitionTime changes exactly when status changes', () => {
    const step = fc.record({
      type: fc.constantFrom('Ready', 'Running'),
      status: fc.constantFrom('True' as const, 'False' as const, 'Unknown' as const),
      reason: fc.constantFrom('A', 'B'),
      dt: fc.integer({ min: 1, max: 3600 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        let conds: Condition[] = [];
        let now = T0;
        for (const s of steps) {
          now += s.dt * 1000;
          const before = findCondition(conds, s.type);
          conds = setCondition(conds, { type: s.type, status: s.status, reason: s.reason }, now);
          const after = findCondition(conds, s.type)!;
          if (before && before.status === s.status)
            expect(after.lastTransitionTime).toBe(before.lastTransitionTime);
          else expect(after.lastTransitionTime).toBe(new Date(now).toISOString().replace('.000Z', 'Z'));
          expect(conds.filter((c) => c.type === s.type)).toHaveLength(1);
        }
      }),
    );
  });
});
