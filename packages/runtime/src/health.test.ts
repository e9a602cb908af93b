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
    let now = 1_000_000;
    const m = new RuntimeMetrics(undefined, { now: () => now });
    m.initController('operation');
    m.observeReconcile('operation', 'error', 0.2);
    const clock = { now: () => now, setTimeout: () => ({ id: 0 }), clearTimeout: () => {} };
    const q: WorkQueue<string> = new WorkQueue<string>({
      name: 'operation',
      clock,
      metrics: m.queueMetrics('operation', () => q.inFlightSince()),
    });
    q.add('a');
    q.add('b');
    q.add('c');
    const item = await q.get();
    if (!item.shutdown) q.done(item.key);
    // Two items in flight, for 3 s and 1 s.
    await q.get();
    now += 2_000;
    await q.get();
    now += 1_000;
    m.observeWebhook('/validate-operation', 200, 0.004);
    m.restClientMetrics('cronoperation').request('POST', '201', 0.003);
    m.restClientMetrics('cronoperation').rateLimited('POST', 0.05);
    m.leaderMetric('vworkspace-operator')(true);
    const s = await startMetricsServer(m.registry, 0, '127.0.0.1');
    servers.push(s);
    const { status, body } = await get(s.port, '/metrics');
    expect(status).toBe(200);
    expect(body).toContain('controller_runtime_reconcile_total{controller="operation",result="error"} 1');
    expect(body).toContain('controller_runtime_reconcile_total{controller="operation",result="success"} 0');
    expect(body).toContain('controller_runtime_reconcile_errors_total{controller="operation"} 1');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_count{controller="operation"} 1');
    expect(body).toContain('workqueue_depth{name="operation"} 0');
    expect(body).toContain('workqueue_adds_total{name="operation"} 3');
    expect(body).toContain('workqueue_unfinished_work_seconds{name="operation"} 4');
    expect(body).toContain('workqueue_longest_running_processor_seconds{name="operation"} 3');
    expect(body).toContain(
      'controller_runtime_webhook_latency_seconds_bucket{le="0.005",webhook="/validate-operation"} 1',
    );
    expect(body).toContain(
      'controller_runtime_webhook_requests_total{webhook="/validate-operation",code="200"} 1',
    );
    expect(body).toContain('rest_client_requests_total{client="cronoperation",code="201",method="POST"} 1');
    expect(body).toContain(
      'rest_client_request_duration_seconds_count{client="cronoperation",verb="POST"} 1',
    );
    expect(body).toContain(
      'rest_client_rate_limiter_duration_seconds_sum{client="cronoperation",verb="POST"} 0.05',
    );
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
