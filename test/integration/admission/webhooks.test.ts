// The admission webhooks behind the real API server: registered by URL on loopback over TLS, with
// the catalog store watching real ConfigMaps, real SubjectAccessReviews against RBAC Roles, and users
// played through impersonation. Each denial reaches the client verbatim, server-side dry runs get the
// same answer, approval is stamped with the real requesting user.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  EventRecorder,
  KubeApiError,
  type KubeStatus,
  type RestClient,
  realClock,
} from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { makeServingCert } from '../../../hack/lib/certs.ts';
import { AccessCache, DEFAULT_ACCESS_CACHE_SECONDS } from '../../../operator/src/admission/access-cache.ts';
import { ANNOTATION_CREATED_BY } from '../../../operator/src/admission/approval.ts';
import { createAdmissionHandlers, WEBHOOK_PATHS } from '../../../operator/src/admission/handlers.ts';
import { startWebhookServer, type WebhookServer } from '../../../operator/src/admission/server.ts';
import {
  CATALOG_ENTRY_SKIPPED,
  CatalogStore,
  createCatalogInformer,
} from '../../../operator/src/catalog/store.ts';
import { testClient } from '../../support/clients.ts';
import { eventually } from '../../support/eventually.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

const quietLog = { info: () => {}, warn: () => {}, error: () => {} };
const OPS = '/apis/ops.vworkspace.io/v1alpha1';
const APPROVE = 'ops.vworkspace.io/approve';
const APPROVED_BY = 'ops.vworkspace.io/approved-by';

function impersonating(admin: KubeConfig, user: string): RestClient {
  const kc = new KubeConfig();
  const cluster = admin.getCurrentCluster()!;
  const me = admin.getCurrentUser()!;
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ ...me, name: user, impersonateUser: user }],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  return testClient(kc);
}

/** The API server's Status for a failed call. */
async function failure(p: Promise<unknown>): Promise<KubeStatus & { causes: { field: string }[] }> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof KubeApiError)) throw err;
    const body = (typeof err.body === 'object' ? err.body : {}) as KubeStatus & {
      details?: { causes?: { field: string }[] };
    };
    return { ...body, causes: body.details?.causes ?? [] };
  }
  throw new Error('expected the request to be denied, it was admitted');
}

describe('admission webhooks', () => {
  const admin = adminKubeConfig();
  const client = testClient(admin);
  const certDir = mkdtempSync(join(tmpdir(), 'vws-admission-'));
  const cert = makeServingCert(certDir);
  const suffix = `${Date.now()}`;
  let server: WebhookServer;
  let store: CatalogStore;
  let ns: string;
  let operatorNs: string;
  const alice = impersonating(admin, 'alice'); // create operations + backup on shop
  const mallory = impersonating(admin, 'mallory'); // create operations only
  const bob = impersonating(admin, 'bob'); // approver

  const operation = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' }, ...spec },
  });
  const create = (as: RestClient, plural: string, body: unknown, dryRun = false) =>
    as.request<{ metadata: { name: string; annotations?: Record<string, string> } }>({
      method: 'POST',
      path: `${OPS}/namespaces/${ns}/${plural}`,
      body,
      ...(dryRun ? { query: { dryRun: 'All' } } : {}),
    });
  const annotate = (as: RestClient, name: string, annotations: Record<string, string | null>) =>
    as.request<{ metadata: { annotations?: Record<string, string> } }>({
      method: 'PATCH',
      path: `${OPS}/namespaces/${ns}/operations/${name}`,
      body: { metadata: { annotations } },
      contentType: 'application/merge-patch+json',
    });
  const putCatalog = (name: string, catalog: unknown) =>
    client
      .request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${operatorNs}/configmaps/${name}`,
        query: { fieldManager: 'test', force: true },
        contentType: 'application/apply-patch+yaml',
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name, namespace: operatorNs, labels: { 'ops.vworkspace.io/catalog': 'true' } },
          data: { 'catalog.yaml': YAML.stringify(catalog) },
        },
      })
      .then(() => undefined);

  async function rbac(name: string, user: string, rules: unknown[]) {
    const rbacPath = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
    await client.request({ method: 'POST', path: `${rbacPath}/roles`, body: { metadata: { name }, rules } });
    await client.request({
      method: 'POST',
      path: `${rbacPath}/rolebindings`,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  }

  async function registerWebhooks() {
    const clientConfig = (path: string) => ({
      url: `https://127.0.0.1:${server.port}${path}`,
      caBundle: Buffer.from(cert.caPem).toString('base64'),
    });
    const common = {
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    };
    const rule = (resources: string[]) => [
      {
        apiGroups: ['ops.vworkspace.io'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources,
      },
    ];
    await client.request({
      method: 'POST',
      path: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
      body: {
        metadata: { name: `vworkspace-${suffix}` },
        webhooks: [
          {
            ...common,
            name: 'moperation.ops.vworkspace.io',
            clientConfig: clientConfig(WEBHOOK_PATHS.mutateOperation),
            rules: rule(['operations']),
          },
          {
            ...common,
            name: 'mschedule.ops.vworkspace.io',
            clientConfig: clientConfig(WEBHOOK_PATHS.mutateSchedule),
            rules: rule(['cronoperations', 'watchoperations']),
          },
        ],
      },
    });
    await client.request({
      method: 'POST',
      path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
      body: {
        metadata: { name: `vworkspace-${suffix}` },
        webhooks: [
          ['voperation', WEBHOOK_PATHS.validateOperation, 'operations'],
          ['vcronoperation', WEBHOOK_PATHS.validateCronOperation, 'cronoperations'],
          ['vwatchoperation', WEBHOOK_PATHS.validateWatchOperation, 'watchoperations'],
        ].map(([n, path, resource]) => ({
          ...common,
          name: `${n}.ops.vworkspace.io`,
          clientConfig: clientConfig(path!),
          rules: rule([resource!]),
        })),
      },
    });
  }

  beforeAll(async () => {
    ns = await createNamespace(admin, 'admission');
    operatorNs = await createNamespace(admin, 'operator');
    store = new CatalogStore({
      informer: createCatalogInformer(admin, operatorNs, { client }),
      events: new EventRecorder({ client }),
    });
    store.informer.start();
    server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      certDir,
      log: quietLog,
      // The operator's defaults: allowing reviews kept for 10 s, denials never.
      handlers: createAdmissionHandlers({
        client,
        templates: store,
        accessCache: new AccessCache(DEFAULT_ACCESS_CACHE_SECONDS, realClock),
      }),
    });
    for (const [name, annotations] of [
      ['shop', { 'ops.vworkspace.io/backup': 'velero' }],
      ['wiki', { 'ops.vworkspace.io/backup': 'workflow' }],
      ['bare', {}],
    ] as const) {
      await client.request({
        method: 'POST',
        path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${ns}/applicationinstances`,
        body: {
          apiVersion: 'apps.vworkspace.io/v1alpha1',
          kind: 'ApplicationInstance',
          metadata: { name, annotations },
          spec: { appRef: { catalogId: name }, release: { name } },
        },
      });
    }
    const writeOps = {
      apiGroups: ['ops.vworkspace.io'],
      resources: ['operations', 'cronoperations', 'watchoperations'],
      verbs: ['create', 'get', 'update', 'patch'],
    };
    await rbac('alice', 'alice', [
      writeOps,
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        resourceNames: ['shop', 'wiki'],
        verbs: ['backup', 'approve'],
      },
    ]);
    await rbac('mallory', 'mallory', [writeOps]);
    await rbac('bob', 'bob', [
      writeOps,
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['approve'] },
    ]);
    await registerWebhooks();
    // The configuration takes effect asynchronously: wait until the mutating webhook stamps.
    await eventually('the mutating webhook to stamp created-by', async () => {
      const op = await create(alice, 'operations', operation('warmup', {}), true);
      return op.metadata.annotations?.[ANNOTATION_CREATED_BY] !== undefined;
    });
  });

  afterAll(async () => {
    for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
      await client
        .request({
          method: 'DELETE',
          path: `/apis/admissionregistration.k8s.io/v1/${kind}/vworkspace-${suffix}`,
        })
        .catch(() => {});
    }
    await server?.close();
    await store?.informer.stop();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('guards the target with a SubjectAccessReview of the requesting user (confused deputy)', async () => {
    const denied = await failure(create(mallory, 'operations', operation('by-mallory', {})));
    expect(denied.code).toBe(403);
    expect(denied.message).toBe(
      `admission webhook "voperation.ops.vworkspace.io" denied the request: spec.targetRef.name: Forbidden: user "mallory" may not backup applicationinstances.apps.vworkspace.io/shop in namespace ${ns}; an Operation of type Backup on shop needs RBAC verb "backup" on resource applicationinstances (group apps.vworkspace.io) for the ApplicationInstance shop: ask the namespace admin for a Role and RoleBinding granting it`,
    );
    const ok = await create(alice, 'operations', operation('by-alice', {}));
    expect(ok.metadata.annotations?.[ANNOTATION_CREATED_BY]).toBe('alice');
  });

  it('asks again after a denial: a grant given after it works at once', async () => {
    const carol = impersonating(admin, 'carol');
    await rbac('carol', 'carol', [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
    ]);
    const denied = await failure(create(carol, 'operations', operation('by-carol', {})));
    expect(denied.message).toContain('user "carol" may not backup');
    await rbac('carol-backup', 'carol', [
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        resourceNames: ['shop'],
        verbs: ['backup'],
      },
    ]);
    // The API server's RBAC sees the grant (its own cache follows a watch), then ONE create must pass:
    // a denial the webhook had kept would refuse it.
    await eventually("the API server to see carol's grant", async () => {
      const review = await client.request<{ status?: { allowed?: boolean } }>({
        method: 'POST',
        path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: 'carol',
            groups: ['system:authenticated'],
            resourceAttributes: {
              namespace: ns,
              verb: 'backup',
              group: 'apps.vworkspace.io',
              resource: 'applicationinstances',
              name: 'shop',
            },
          },
        },
      });
      return review.status?.allowed === true;
    });
    const ok = await create(carol, 'operations', operation('by-carol', {}));
    expect(ok.metadata.annotations?.[ANNOTATION_CREATED_BY]).toBe('carol');
  });

  it.each([
    [
      'an unknown template',
      { template: 'nope' },
      'spec.template: template nope does not exist or is disabled in the catalog',
    ],
    ['bad parameters', { parameters: { ttl: 'forever' } }, 'spec.parameters.ttl: Invalid value: "forever"'],
    [
      'a missing target',
      { targetRef: { name: 'ghost' } },
      `spec.targetRef.name: Not found: ApplicationInstance ghost does not exist in namespace`,
    ],
    [
      'a target without the capability',
      { targetRef: { name: 'bare' } },
      'spec.targetRef.name: CapabilityMissing: ApplicationInstance bare does not advertise ops.vworkspace.io/backup: velero',
    ],
  ])('denies %s, the same with --dry-run=server', async (_what, spec, text) => {
    for (const dryRun of [false, true]) {
      const denied = await failure(create(alice, 'operations', operation(`bad-${dryRun}`, spec), dryRun));
      expect(denied.message).toContain(
        'admission webhook "voperation.ops.vworkspace.io" denied the request: ',
      );
      expect(denied.message).toContain(text);
    }
  });

  it('denies a forged created-by and refuses spec changes with the webhook message', async () => {
    const forged = await failure(
      create(alice, 'operations', operation('forged', {}, { [ANNOTATION_CREATED_BY]: 'bob' })),
    );
    expect(forged.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_CREATED_BY}]`]);
    await create(alice, 'operations', operation('immutable', {}));
    const changed = await failure(
      alice.request({
        method: 'PATCH',
        path: `${OPS}/namespaces/${ns}/operations/immutable`,
        body: { spec: { parameters: { ttl: '1h' } } },
        contentType: 'application/merge-patch+json',
      }),
    );
    // the mutating webhook answers before the CRD's CEL rule, so its message is the one users see
    expect(changed.message).toContain(
      'admission webhook "moperation.ops.vworkspace.io" denied the request: spec.parameters: Forbidden: spec.parameters is immutable after create; only spec.cancel',
    );
    await expect(
      alice.request({
        method: 'PATCH',
        path: `${OPS}/namespaces/${ns}/operations/immutable`,
        body: { spec: { cancel: true } },
        contentType: 'application/merge-patch+json',
      }),
    ).resolves.toBeTruthy();
  });

  it('checks CronOperation schedules, zones and the embedded Operation', async () => {
    const cron = (
      name: string,
      schedule: string,
      timeZone: string,
      opSpec: Record<string, unknown> = {},
    ) => ({
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'CronOperation',
      metadata: { name },
      spec: {
        schedule,
        timeZone,
        operationTemplate: {
          spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' }, ...opSpec },
        },
      },
    });
    const badZone = await failure(
      create(alice, 'cronoperations', cron('c1', '0 2 * * *', 'Europe/Atlantis')),
    );
    expect(badZone.message).toContain('spec.timeZone: Invalid value: unknown time zone "Europe/Atlantis"');
    const badRange = await failure(create(alice, 'cronoperations', cron('c2', '0 25 * * *', 'UTC'), true));
    expect(badRange.causes.map((c) => c.field)).toEqual(['spec.schedule']);
    const badTemplate = await failure(
      create(alice, 'cronoperations', cron('c3', '@daily', 'UTC', { targetRef: { name: 'ghost' } })),
    );
    expect(badTemplate.causes[0]?.field).toBe('spec.operationTemplate.spec.targetRef.name');
    expect(badTemplate.message).toContain('ApplicationInstance ghost does not exist');
    const notAllowed = await failure(create(mallory, 'cronoperations', cron('c4', '@daily', 'UTC')));
    expect(notAllowed.code).toBe(403);
    await expect(
      create(alice, 'cronoperations', cron('c5', '@weekly', 'Asia/Kolkata')),
    ).resolves.toBeTruthy();
  });

  it('run-now needs the type verb on the target; parametersFromTrigger and fleets are checked at their field paths', async () => {
    const RUN_NOW = 'ops.vworkspace.io/run-now';
    const cron = (
      name: string,
      spec: Record<string, unknown> = {},
      opSpec: Record<string, unknown> = {},
    ) => ({
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'CronOperation',
      metadata: { name },
      spec: {
        schedule: '@daily',
        operationTemplate: {
          spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' }, ...opSpec },
        },
        ...spec,
      },
    });
    const annotateCron = (as: RestClient, name: string, value: string) =>
      as.request({
        method: 'PATCH',
        path: `${OPS}/namespaces/${ns}/cronoperations/${name}`,
        body: { metadata: { annotations: { [RUN_NOW]: value } } },
        contentType: 'application/merge-patch+json',
      });
    await create(alice, 'cronoperations', cron('nightly-run'));
    // mallory may patch CronOperations but may not back up shop: asking for a run now is running it.
    const denied = await failure(annotateCron(mallory, 'nightly-run', 't1'));
    expect(denied.code).toBe(403);
    expect(denied.causes.map((c) => c.field)).toEqual([`metadata.annotations[${RUN_NOW}]`]);
    expect(denied.message).toContain('may not backup applicationinstances.apps.vworkspace.io/shop');
    await expect(annotateCron(alice, 'nightly-run', 't1')).resolves.toBeTruthy();

    const substituting = (parameter: string, from: string) =>
      failure(
        create(alice, 'cronoperations', cron('subst', { parametersFromTrigger: [{ parameter, from }] })),
      );
    const badFrom = await substituting('ttl', 'trigger.time');
    expect(badFrom.causes.map((c) => c.field)).toEqual(['spec.parametersFromTrigger[0].from']);
    expect(badFrom.message).toContain('unknown variable "trigger.time"');
    const badParam = await substituting('tll', 'trigger.scheduledTime');
    expect(badParam.causes.map((c) => c.field)).toEqual(['spec.parametersFromTrigger[0].parameter']);
    // The CRD's own rule: a fixed target or a fleet selector, not both.
    const both = await failure(create(alice, 'cronoperations', cron('both', { targetSelector: {} })));
    expect(both.message).toContain('set exactly one of spec.targetSelector');
    // A fleet needs the verb on every instance of the namespace; alice has it on shop and wiki only.
    const fleet = cron('fleet', { targetSelector: { matchLabels: { tier: 'prod' } } });
    delete (fleet.spec.operationTemplate.spec as { targetRef?: unknown }).targetRef;
    const notEvery = await failure(create(alice, 'cronoperations', fleet));
    expect(notEvery.code).toBe(403);
    expect(notEvery.causes.map((c) => c.field)).toEqual(['spec.operationTemplate.spec.type']);
  });

  it('stamps approval with the real approver, rejects forgery and self-approval under separation of duties', async () => {
    await putCatalog('guarded', {
      templates: [
        {
          name: 'guarded-backup',
          type: 'Backup',
          engine: 'velero',
          inputSchema: { type: 'object', properties: {} },
          rbacProfile: 'backup.velero',
          preconditions: [{ name: 'TargetExists' }],
          separationOfDuties: true,
          defaults: { requiresApproval: true },
        },
      ],
    });
    await eventually('the catalog template guarded-backup', () =>
      create(alice, 'operations', operation('guarded', { template: 'guarded-backup' })),
    );
    const forged = await failure(annotate(alice, 'guarded', { [APPROVED_BY]: 'bob' }));
    expect(forged.causes.map((c) => c.field)).toEqual([`metadata.annotations[${APPROVED_BY}]`]);
    const self = await failure(annotate(alice, 'guarded', { [APPROVE]: 'true' }));
    expect(self.code).toBe(403);
    expect(self.message).toContain('requires separation of duties and "alice" created this Operation');
    const noVerb = await failure(annotate(mallory, 'guarded', { [APPROVE]: 'true' }));
    expect(noVerb.message).toContain('may not approve applicationinstances.apps.vworkspace.io/shop');
    const approved = await annotate(bob, 'guarded', { [APPROVE]: 'true' });
    expect(approved.metadata.annotations?.[APPROVED_BY]).toBe('bob');
    expect(approved.metadata.annotations?.[ANNOTATION_CREATED_BY]).toBe('alice');
    const rewrite = await failure(annotate(bob, 'guarded', { [APPROVED_BY]: 'carol' }));
    expect(rewrite.causes.map((c) => c.field)).toEqual([`metadata.annotations[${APPROVED_BY}]`]);
  });

  it('hot-reloads the catalog: a new template becomes usable, a bad entry is skipped with a Warning Event', async () => {
    const wikiBackup = operation('wiki-backup', {
      engine: 'workflow',
      template: 'wiki-backup',
      targetRef: { name: 'wiki' },
      parameters: { workflowTemplate: 'backup-wiki' },
    });
    const before = await failure(create(alice, 'operations', wikiBackup));
    expect(before.message).toContain('spec.template: template wiki-backup does not exist');
    await putCatalog('team', {
      templates: [
        {
          name: 'wiki-backup',
          type: 'Backup',
          engine: 'workflow',
          inputSchema: {
            type: 'object',
            required: ['workflowTemplate'],
            properties: { workflowTemplate: { type: 'string' } },
          },
          rbacProfile: 'runbook.workflow',
          preconditions: [{ name: 'TargetExists' }],
        },
        { name: 'broken-entry', type: 'Backup', engine: 'teleport' },
      ],
    });
    await eventually('the hot-reloaded template', () => create(alice, 'operations', wikiBackup));
    const events = await eventually('a CatalogEntrySkipped event', async () => {
      const list = await client.request<{
        items: { reason: string; type: string; note: string; regarding: { name: string } }[];
      }>({
        method: 'GET',
        path: `/apis/events.k8s.io/v1/namespaces/${operatorNs}/events`,
      });
      const mine = list.items.filter(
        (e) => e.regarding.name === 'team' && e.reason === CATALOG_ENTRY_SKIPPED,
      );
      if (mine.length === 0) throw new Error('no event yet');
      return mine;
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.type).toBe('Warning');
    expect(events[0]?.note).toContain('templates[1]');
    expect(events[0]?.note).toContain('broken-entry');
  });
});
