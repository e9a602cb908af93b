import { afterEach, describe, expect, it } from 'vitest';
import { type HttpServerHandle, ProbeChecks, startMetricsServer, startProbeServer } from './health.ts';
import { RuntimeMetrics } from './metrics.ts';
import { WorkQueue } from './workqueue.ts';

const servers: HttpServerHandle[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

describe('metrics server', () => {
  it('serves controller-runtime metric names on /metrics', async () => {
    const m = new RuntimeMetrics();
    m.initController('operation');
    m.observeReconcile('operation', 'error', 0.2);
    const q = new WorkQueue<string>({ name: 'operation', metrics: m.queueMetrics('operation') });
    q.add('a');
    q.add('b');
    const item = await q.get();
    if (!item.shutdown) q.done(item.key);
    m.leaderMetric('vworkspace-operator')(true);
    const s = await startMetricsServer(m.registry, 0, '127.0.0.1');
    servers.push(s);
    const { status, body } = await get(s.port, '/metrics');
    expect(status).toBe(200);
    expect(body).toContain('controller_runtime_reconcile_total{controller="operation",result="error"} 1');
    expect(body).toContain('controller_runtime_reconcile_total{controller="operation",result="success"} 0');
    expect(body).toContain('controller_runtime_reconcile_errors_total{controller="operation"} 1');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_count{controller="operation"} 1');
    expect(body).toContain('workqueue_depth{name="operation"} 1');
    expect(body).toContain('workqueue_adds_total{name="operation"} 2');
    expect(body).toContain('workqueue_retries_total{name="operation"} 0');
    expect(body).toContain('workqueue_queue_duration_seconds_bucket');
    expect(body).toContain('workqueue_work_duration_seconds_bucket');
    expect(body).toContain('leader_election_master_status{name="vworkspace-operator"} 1');
    expect((await get(s.port, '/other')).status).toBe(404);
  });
});

describe('probe server', () => {
  it('healthz passes, readyz fails until every ready check passes, and says which failed', async () => {
    const checks = new ProbeChecks();
    let synced = false;
    checks.addHealthCheck('ping', () => true);
    checks.addReadyCheck('informer-operations', () => synced);
    checks.addReadyCheck('throws', async () => {
      if (!synced) throw new Error('x');
      return true;
    });
    const s = await startProbeServer(checks, 0, '127.0.0.1');
    servers.push(s);
    expect(await get(s.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    const notReady = await get(s.port, '/readyz');
    expect(notReady.status).toBe(500);
    expect(notReady.body).toContain('[-]informer-operations failed');
    expect(notReady.body).toContain('[-]throws failed');
    synced = true;
    expect(await get(s.port, '/readyz?verbose')).toEqual({
      status: 200,
      body: '[+]informer-operations ok\n[+]throws ok\nok\n',
    });
  });

  it('close() returns even with an idle keep-alive connection open', async () => {
    const s = await startProbeServer(new ProbeChecks(), 0, '127.0.0.1');
    await get(s.port, '/healthz');
    await s.close();
    await expect(fetch(`http://127.0.0.1:${s.port}/healthz`)).rejects.toThrow();
  });
});
