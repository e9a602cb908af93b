// The webhook server behind the real API server: registered by URL on loopback, its denials reach
// the client verbatim, idle connections outlive the API server's reuse, and a rotated certificate is
// picked up without a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AdmissionregistrationV1Api,
  ApiException,
  CoreV1Api,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeServingCert } from '../../../hack/lib/certs.ts';
import { allow, deny } from '../../../operator/src/admission/review.ts';
import { startWebhookServer, type WebhookServer } from '../../../operator/src/admission/server.ts';
import { eventually } from '../../support/eventually.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

const quietLog = { info: () => {}, warn: () => {}, error: () => {} };

describe('admission webhook server', () => {
  const kc = adminKubeConfig();
  const certDir = mkdtempSync(join(tmpdir(), 'vws-webhook-'));
  let cert = makeServingCert(certDir);
  let server: WebhookServer;
  let ns: string;
  const hookName = `configmaps-${Date.now()}.test.vworkspace.io`;
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);

  async function register(caPem: string) {
    const body = {
      metadata: { name: hookName },
      webhooks: [
        {
          name: 'configmaps.test.vworkspace.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          timeoutSeconds: 5,
          clientConfig: {
            url: `https://127.0.0.1:${server.port}/validate-configmap`,
            caBundle: Buffer.from(caPem).toString('base64'),
          },
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          rules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
        },
      ],
    };
    try {
      const current = await admission.readValidatingWebhookConfiguration({ name: hookName });
      await admission.replaceValidatingWebhookConfiguration({
        name: hookName,
        body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } },
      });
    } catch (err) {
      if (!(err instanceof ApiException) || err.code !== 404) throw err;
      await admission.createValidatingWebhookConfiguration({ body });
    }
  }

  const createCm = (name: string, data: Record<string, string>) =>
    kc
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data } as V1ConfigMap });

  beforeAll(async () => {
    ns = await createNamespace(kc, 'webhook');
    server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      certDir,
      log: quietLog,
      certPollMs: 200,
      handlers: {
        '/validate-configmap': (req) => {
          const cm = req.object as V1ConfigMap;
          return cm.data?.forbidden
            ? // Not ASCII: the response's Content-Length must count bytes, not characters.
              deny(req.uid, [{ field: 'data.forbidden', message: 'remove the key «forbidden» — reserved' }])
            : allow(req.uid);
        },
      },
    });
    await register(cert.caPem);
  });

  afterAll(async () => {
    await admission.deleteValidatingWebhookConfiguration({ name: hookName }).catch(() => {});
    await server?.close();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('relays a denial with its field path through the API server', async () => {
    // the webhook configuration takes effect asynchronously: wait until a denial comes back
    const err = await eventually('the webhook to deny', async () => {
      try {
        await createCm(`bad-${Date.now()}`, { forbidden: 'x' });
      } catch (e) {
        return e;
      }
      throw new Error('not denied yet');
    });
    expect(err).toBeInstanceOf(ApiException);
    const raw = (err as ApiException<unknown>).body;
    const status = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { code: number; message: string };
    expect(status.code).toBe(422);
    expect(status.message).toBe(
      'admission webhook "configmaps.test.vworkspace.io" denied the request: data.forbidden: remove the key «forbidden» — reserved',
    );
    await expect(createCm('good', { fine: 'x' })).resolves.toBeTruthy();
  });

  it("keeps an idle connection open past Node's 5 s default, so the API server can reuse it", async () => {
    // The API server's webhook client keeps idle connections 90 s; a server that closes one first makes the
    // request that was reusing it fail with "broken pipe". Asserts reuse after an idle 6 s, not a speed.
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: cert.caPem });
    const post = () =>
      new Promise<boolean>((ok, fail) => {
        const req = request(
          { host: '127.0.0.1', port: server.port, method: 'POST', path: '/validate-nothing', agent },
          (res) => {
            res.resume();
            res.on('end', () => ok(req.reusedSocket));
          },
        );
        req.on('error', fail);
        req.end('{}');
      });
    try {
      expect(await post()).toBe(false);
      await sleep(6_000);
      expect(await post()).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('serves a rotated certificate without a restart', async () => {
    cert = makeServingCert(certDir); // new CA and pair in place, like an OLM rotation
    await register(cert.caPem); // the API server now trusts only the new CA
    await eventually('a create through the rotated certificate', () =>
      createCm(`after-rotation-${Date.now()}`, { fine: 'x' }),
    );
    expect(await server.reloadCertificates()).toBe(false); // the poll already took the new pair
  });
});
