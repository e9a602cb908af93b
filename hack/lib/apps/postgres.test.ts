import { describe, expect, it } from 'vitest';
import { parseState, podOf, pvcOf, STATE_SQL, showState } from './postgres.ts';

describe('the PostgreSQL state the journeys compare', () => {
  it('reads the one line of STATE_SQL in its order', () => {
    expect(parseState('100000|1|10|400|a8b0|9f1e|2\n')).toEqual({
      accounts: 100000,
      branches: 1,
      tellers: 10,
      history: 400,
      accountsMd5: 'a8b0',
      historyMd5: '9f1e',
      schema: 2,
    });
  });

  it('refuses anything else, naming what it got', () => {
    expect(() => parseState('ERROR: relation "pgbench_accounts" does not exist')).toThrow(
      /not a database state line/,
    );
    expect(() => parseState('x|1|10|400|a|b|2')).toThrow(/not a database state line/);
  });

  it('asks for every field it parses', () => {
    for (const t of [
      'pgbench_accounts',
      'pgbench_branches',
      'pgbench_tellers',
      'pgbench_history',
      'vws_schema_migrations',
    ])
      expect(STATE_SQL).toContain(t);
  });

  it('names the pod and claim of the chart', () => {
    expect(podOf('db')).toBe('db-postgres-0');
    expect(pvcOf('db')).toBe('data-db-postgres-0');
    expect(showState(parseState('1|1|10|0|x||0'))).toContain('pgbench_accounts 1 rows md5 x');
  });
});
