// The window on the PostgreSQL of the production journey and the demo: psql and pgbench run inside the
// database's pod (`kubectl exec`, through the API server and the kubelet, as an operator would), and what
// the journey compares is what the database itself answers: row counts and checksums of the pgbench tables, the
// schema migrations it recorded, its checkpoint counter.
import { PassThrough } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import type { KubeClient } from '@vworkspace/runtime';
import { eventually } from '../eventually.ts';

/** The pod and container the chart runs (test/fixtures/charts/postgres): one StatefulSet replica. */
export const podOf = (release: string) => `${release}-postgres-0`;
export const CONTAINER = 'postgres';
/** The claim the StatefulSet made for that pod (volumeClaimTemplates `data`). */
export const pvcOf = (release: string) => `data-${release}-postgres-0`;

/** What the journey compares before and after each step. */
export interface DbState {
  accounts: number;
  branches: number;
  tellers: number;
  history: number;
  /** md5 over every account's id, branch and balance, in id order. */
  accountsMd5: string;
  /** md5 over the history rows (the transactions pgbench ran), in insertion-independent order. */
  historyMd5: string;
  /** The highest schema migration the chart's hook recorded (0: none). */
  schema: number;
}

/** One query, one line: `|`-separated fields in DbState's order. */
export const STATE_SQL = [
  'SELECT',
  ' (SELECT count(*) FROM pgbench_accounts),',
  ' (SELECT count(*) FROM pgbench_branches),',
  ' (SELECT count(*) FROM pgbench_tellers),',
  ' (SELECT count(*) FROM pgbench_history),',
  " (SELECT md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts),",
  " (SELECT md5(coalesce(string_agg(tid || ':' || bid || ':' || aid || ':' || delta || ':' || mtime, ',' ORDER BY tid, aid, mtime, delta), '')) FROM pgbench_history),",
  " (SELECT coalesce(max(version), 0) FROM vws_schema_migrations WHERE to_regclass('vws_schema_migrations') IS NOT NULL)",
].join('');

/** Parses STATE_SQL's line. Pure. */
export function parseState(line: string): DbState {
  const f = line.trim().split('|');
  if (f.length !== 7 || f.slice(0, 4).some((x) => !/^\d+$/.test(x)))
    throw new Error(`not a database state line: ${JSON.stringify(line)}`);
  return {
    accounts: Number(f[0]),
    branches: Number(f[1]),
    tellers: Number(f[2]),
    history: Number(f[3]),
    accountsMd5: f[4]!,
    historyMd5: f[5]!,
    schema: Number(f[6]),
  };
}

/** A state as the journey prints it. Pure. */
export function showState(s: DbState): string {
  return `pgbench_accounts ${s.accounts} rows md5 ${s.accountsMd5}, pgbench_history ${s.history} rows md5 ${s.historyMd5}, branches ${s.branches}, tellers ${s.tellers}, schema ${s.schema}`;
}

export class Database {
  private readonly exec: Exec;
  private readonly client: KubeClient;
  readonly namespace: string;
  readonly release: string;
  /** The pod the server runs in: the release's, or another one on a restored volume. */
  readonly pod: string;
  constructor(kc: KubeConfig, client: KubeClient, namespace: string, release: string, pod = podOf(release)) {
    this.exec = new Exec(kc);
    this.client = client;
    this.namespace = namespace;
    this.release = release;
    this.pod = pod;
  }

  /** Runs `command` in the database container; resolves with its stdout, rejects with its stderr. */
  run(command: string[]): Promise<string> {
    const out = new PassThrough();
    const err = new PassThrough();
    const chunks: Buffer[] = [];
    const errors: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    err.on('data', (c: Buffer) => errors.push(c));
    return new Promise((resolve, reject) => {
      const done = (status: V1Status) => {
        const stdout = Buffer.concat(chunks).toString();
        const stderr = Buffer.concat(errors).toString();
        if (status.status === 'Success') resolve(stdout);
        else
          reject(
            new Error(
              `${command.join(' ')} in ${this.namespace}/${this.pod}: ${status.message ?? status.reason ?? 'failed'}\n${stderr}${stdout}`,
            ),
          );
      };
      this.exec.exec(this.namespace, this.pod, CONTAINER, command, out, err, null, false, done).catch(reject);
    });
  }

  /** psql over the pod's socket (trusted locally, as the image sets it up): unaligned, tuples only. */
  psql(sql: string): Promise<string> {
    return this.run([
      'psql',
      '-h',
      '/var/run/postgresql',
      '-U',
      'postgres',
      '-X',
      '-At',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      sql,
    ]).then((s) => s.trim());
  }

  async state(): Promise<DbState> {
    return parseState(await this.psql(STATE_SQL));
  }

  /** CHECKPOINTs requested so far (a quiesce hook's CHECKPOINT counts one). */
  async checkpointsRequested(): Promise<number> {
    return Number(await this.psql('SELECT checkpoints_req FROM pg_stat_bgwriter'));
  }

  /** `pgbench -i -s <scale>`, then `transactions` pgbench transactions per client on 2 clients. */
  async load(scale: number, transactions: number): Promise<string> {
    const pgbench = ['pgbench', '-h', '/var/run/postgresql', '-U', 'postgres'];
    const init = await this.run([...pgbench, '-i', '-s', String(scale), '-q', 'postgres']);
    const run = await this.run([...pgbench, '-c', '2', '-t', String(transactions), '-n', 'postgres']);
    return `${init}${run}`;
  }

  /** Waits until the pod exists, runs and its server answers. */
  async ready(timeoutMs = 300_000): Promise<void> {
    await eventually(
      `PostgreSQL ${this.namespace}/${this.pod} answering`,
      async () => {
        const pod = await this.client.request<{
          status?: { conditions?: { type: string; status: string }[] };
        }>({
          method: 'GET',
          path: `/api/v1/namespaces/${this.namespace}/pods/${this.pod}`,
        });
        if (!pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return false;
        return (await this.psql('SELECT 1')) === '1';
      },
      timeoutMs,
      1000,
    );
  }
}
