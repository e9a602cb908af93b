// Item 9 of the threat model (the runtime half): every port the operator opens can be bound to one
// address. With METRICS_HOST, PROBE_HOST and WEBHOOK_HOST set to 127.0.0.1 the servers answer there and
// nowhere else: not on another address of the same machine (127.0.0.2 is local too, and a server bound to
// every interface answers it). The operator's NetworkPolicy (packaging/network/) narrows who reaches the ports on a cluster.
import { type AddressInfo, connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = connect({ host, port });
    s.setTimeout(2000);
    s.once('connect', () => {
      s.destroy();
      ok(true);
    });
    s.once('error', () => ok(false));
    s.once('timeout', () => {
      s.destroy();
      ok(false);
    });
  });
}

describe('listen addresses', () => {
  let w: World;
  let webhookPort: number;
  beforeAll(async () => {
    w = await startWorld({ env: { METRICS_HOST: '127.0.0.1', PROBE_HOST: '127.0.0.1' } });
    const config = await w.admin.request<{ webhooks: { clientConfig: { url: string } }[] }>({
      method: 'GET',
      path: `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/vworkspace-security-${w.id}`,
    });
    webhookPort = Number(new URL(config.webhooks[0]?.clientConfig.url ?? '').port);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('serves metrics, probes and the webhook on 127.0.0.1', async () => {
    const metrics = await fetch(`http://127.0.0.1:${w.operator.metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${w.operator.probePort}/readyz`);
    expect(ready.status).toBe(200);
    expect(await accepts('127.0.0.1', webhookPort)).toBe(true);
  });

  it('is not reachable on another local address (127.0.0.2)', async () => {
    // The control: 127.0.0.2 is a working local address here, so a server on every interface answers it.
    const control = createServer((c) => c.destroy());
    await new Promise<void>((ok) => control.listen(0, '0.0.0.0', () => ok()));
    try {
      expect(await accepts('127.0.0.2', (control.address() as AddressInfo).port)).toBe(true);
    } finally {
      control.close();
    }
    expect(await accepts('127.0.0.2', w.operator.metricsPort)).toBe(false);
    expect(await accepts('127.0.0.2', w.operator.probePort)).toBe(false);
    expect(await accepts('127.0.0.2', webhookPort)).toBe(false);
  });
});
