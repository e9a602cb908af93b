import { describe, expect, it } from 'vitest';
import { anInput } from '../../../test/support/builders/engines.ts';
import { ENGINE_TYPES, ENGINES } from '../api/enums.ts';
import { REASONS } from '../api/reasons.ts';
import { ADAPTERS, adapterFor } from './index.ts';

describe('adapterFor', () => {
  it.each(ENGINES)('%s has an adapter for exactly the types the engine can carry out', (engine) => {
    const a = adapterFor(engine);
    expect(a.engine).toBe(engine);
    expect([...a.types].sort()).toEqual([...ENGINE_TYPES[engine]].sort());
    expect(a.childKinds.length).toBeGreaterThan(0);
  });

  it.each(ENGINES)(
    '%s reports a Running engine reason from the table before its child is visible',
    (engine) => {
      const o = ADAPTERS[engine].observe([], anInput());
      expect(o.phase).toBe('Running');
      expect(REASONS[o.reason as keyof typeof REASONS]).toMatchObject({
        group: 'engine',
        condition: 'Running',
      });
    },
  );
});
