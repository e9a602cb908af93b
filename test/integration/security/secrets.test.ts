// Item 5 of the threat model: the operator's Secret access. It needs cluster-wide list/watch on Secrets
// (Helm keeps release records there; an Operation may wait for a Secret to exist), and RBAC cannot narrow
// a watch to metadata or a list to one type. So what it does with them is the guarantee: it watches
// release Secrets and the Secrets Operations wait for as metadata only (PartialObjectMetadata), and reads
// the payload of a release record only for a release an ApplicationInstance names, in its own namespace.
//
// The observation is what crosses the wire to the operator process (a RecordingProxy between it and the
// API server): what never reaches it, a compromised operator pod would not have held. Team b's release
// record (its rendered values) and team a's restic credentials must never arrive; team a's own release
// record must (its instance turns Ready with the revision).

import { PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { csvInstall, startWorld, type World } from './harness.ts';

const APPS = '/apis/apps.vworkspace.io/v1alpha1';

interface SecretData {
  data?: Record<string, string>;
}

/**
 * A piece of a Secret's `data[key]` as the API server sends it (base64), from the middle: the start of a
 * Helm record is a gzip header every record shares.
 */
async function dataNeedle(w: World, namespace: string, name: string, key: string): Promise<string> {
  const s = await w.admin.request<SecretData>({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/secrets/${name}`,
  });
  const value = s.data?.[key] ?? '';
  expect(value.length).toBeGreaterThan(200);
  return value.slice(120, 180);
}

describe('the operator never holds Secret data it does not need', () => {
  let w: World;
  let needles: Record<string, string>;
  beforeAll(async () => {
    w = await startWorld({ recordOperatorTraffic: true });
    const [a, b] = w.namespaces;
    await w.installRelease(a, 'shop');
    await w.installRelease(b, 'payroll', ['message=payroll-database-password']);
    await w.instance(a, 'shop', { backup: 'volsync' });
    await w.grantProfile('backup.volsync', a);
    await w.grant('alice', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['backup'] },
      // A volsync Operation's requester must be able to read its repository Secret (ADR 0060).
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['restic-config'], verbs: ['get'] },
    ]);
    needles = {
      "team b's release record": await dataNeedle(w, b, 'sh.helm.release.v1.payroll.v1', 'release'),
    };
    for (const n of Object.values(needles)) w.traffic?.needles.add(n);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('keeps the CSV at list and watch on Secrets: no get', () => {
    // Namespaced rules sit in permissions (OLM makes Roles of them, or ClusterRoles for AllNamespaces).
    const install = csvInstall();
    const rules = [...(install.clusterPermissions ?? []), ...(install.permissions ?? [])].flatMap(
      (p) => p.rules,
    );
    const secrets = rules.filter((r) => r.apiGroups.includes('') && r.resources.includes('secrets'));
    expect(secrets.flatMap((r) => r.verbs).sort()).toEqual(['list', 'watch']);
  });

  it("reads the release record of an instance's own release, and only metadata of everyone else's", async () => {
    const [a] = w.namespaces;
    const shop = await w.waitFor('shop to be Ready from its release record', async () => {
      const i = await w.admin.request<ApplicationInstance>({
        method: 'GET',
        path: `${APPS}/namespaces/${a}/applicationinstances/shop`,
      });
      return i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? i : undefined;
    });
    expect(shop.status?.release).toMatchObject({ revision: 1, status: 'deployed', chartVersion: '1.0.0' });
    expect(w.traffic?.hits).toEqual([]);
    const full = w.traffic
      ?.secretRequests()
      .filter(
        (r) =>
          !r.accept.startsWith(PARTIAL_OBJECT_METADATA_LIST) && !r.accept.startsWith(PARTIAL_OBJECT_METADATA),
      );
    const urls = full?.map((r) => decodeURIComponent(r.url)) ?? [];
    // Every Secret read in full is one release record, by name (the API server is shared with other test
    // files, whose instances the operator follows too): never a list of a namespace or of all of them.
    for (const url of urls)
      expect(url).toMatch(
        /^\/api\/v1\/namespaces\/[^/]+\/secrets\?fieldSelector=metadata\.name=sh\.helm\.release\.v1\./,
      );
    // In this world's namespaces, the one read in full is shop's record, by name, in its own namespace.
    expect(urls.filter((u) => w.namespaces.some((ns) => u.startsWith(`/api/v1/namespaces/${ns}/`)))).toEqual([
      `/api/v1/namespaces/${a}/secrets?fieldSelector=metadata.name=sh.helm.release.v1.shop.v1`,
    ]);
  });

  it('waits for a Secret an Operation needs by its metadata: its data never arrives', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('alice'), a, 'nightly', {
      type: 'Backup',
      engine: 'volsync',
      targetRef: { name: 'shop' },
      parameters: { repository: 'restic-config' },
    });
    await w.waitFor('nightly to wait for its repository Secret', async () => {
      const o: Operation = await w.getOperation(a, 'nightly');
      return o.status?.conditions?.some((c) => c.reason === 'MissingSecret') ? o : undefined;
    });
    const password = `restic-${w.id}-${'s3cr3t'.repeat(8)}`;
    w.traffic?.needles.add(Buffer.from(password).toString('base64').slice(0, 40));
    await w.admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${a}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'restic-config' },
        stringData: { RESTIC_REPOSITORY: 's3:http://minio/backups', RESTIC_PASSWORD: password },
      },
    });
    // The Secret's ADDED event (metadata) wakes it: it moves on (the tiny chart has no PVC to back up, so
    // it ends there; what matters is that it saw the Secret appear).
    await w.waitFor('nightly to stop waiting for the Secret', async () => {
      const o: Operation = await w.getOperation(a, 'nightly');
      return o.status?.phase !== 'Blocked' ? o : undefined;
    });
    expect(w.traffic?.hits).toEqual([]);
    const waits = w.traffic?.secretRequests().filter((r) => r.url.includes('restic-config')) ?? [];
    expect(waits.length).toBeGreaterThan(0);
    for (const r of waits) expect(r.accept).toMatch(/as=PartialObjectMetadata/);
  });
});
