// Item 10 of the threat model: hostile input size. spec.parameters nested thousands of levels deep, or
// simply huge, is refused at spec.parameters with a message saying the limit, before any schema
// validation runs (which recursed until the stack ran out and blamed the template); and a body larger than
// the webhook server accepts gets HTTP 413 with a readable body instead of a connection reset. Where the
// webhooks do not run, the API server stores such an Operation (its JSON decoder stops at 10,000 levels for
// the whole object: 9,992 in spec.parameters is the deepest it stores), and the operator must still give it
// a condition saying what to do, without a loop or a crash.
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ADMISSION_BODY_BYTES } from '../../../operator/src/admission/server.ts';
import {
  MAX_PARAMETERS_BYTES,
  MAX_PARAMETERS_DEPTH,
} from '../../../operator/src/catalog/parameters-limits.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { denial, startWorld, type World } from './harness.ts';
import { unselectedNamespace } from './support.ts';

/** `{"deep": … {} …}` nested `levels` deep, as text: JSON.stringify itself recurses and overflows. */
const nestedJson = (levels: number) => `${'{"deep":'.repeat(levels)}{}${'}'.repeat(levels)}`;

interface RawResponse {
  code: number;
  body: string;
}

/** POSTs `body` (text) over HTTPS with the TLS and auth options `opts` carries. */
function post(url: string, body: string | Buffer, opts: Record<string, unknown>): Promise<RawResponse> {
  return new Promise((ok, fail) => {
    const req = httpsRequest(url, { ...opts, method: 'POST' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(body);
  });
}

describe('hostile input size', () => {
  let w: World;
  let a: string;
  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    await w.grant('mallory', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
    ]);
  });
  afterAll(async () => {
    if (unjudgedNs) await w.admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${unjudgedNs}` });
    await w?.stop();
  });

  /** POSTs `body` (JSON text, sent verbatim) to the collection `path` as mallory. */
  async function postAsMallory(path: string, body: string) {
    const opts: { headers?: Record<string, string> } & Record<string, unknown> = {};
    await w.adminKc.applyToHTTPSOptions(opts);
    const server = w.adminKc.getCurrentCluster()?.server ?? '';
    return post(`${server}${path}`, body, {
      ...opts,
      headers: { ...opts.headers, 'Impersonate-User': 'mallory', 'content-type': 'application/json' },
    });
  }

  /** Creates an Operation as mallory whose spec.parameters is `parameters` (JSON text), sent verbatim. */
  function createRaw(name: string, parameters: string, namespace = a) {
    return postAsMallory(
      `/apis/ops.vworkspace.io/v1alpha1/namespaces/${namespace}/operations`,
      `{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Operation","metadata":{"name":"${name}"},"spec":{"type":"RunCommand","engine":"job","targetRef":{"name":"shop"},"parameters":${parameters}}}`,
    );
  }

  /** A namespace the webhooks do not select (it lacks the world's label; the operator watches it). */
  let unjudgedNs: string | undefined;
  async function unjudged(): Promise<string> {
    if (unjudgedNs) return unjudgedNs;
    unjudgedNs = await unselectedNamespace(w, `${a}-unjudged`);
    await w.grant('mallory', unjudgedNs, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations', 'cronoperations'], verbs: ['create'] },
    ]);
    return unjudgedNs;
  }

  /** Warnings and errors about `ns`, or about an informer or a stack overflow, in the operator's log. */
  function complaints(ns: string): string[] {
    return readFileSync(w.operator.logPath, 'utf8')
      .split('\n')
      .filter((l) => /"level":"(warn|error|fatal)"/.test(l))
      .filter((l) => l.includes(ns) || /informer|call stack/.test(l))
      .map((l) => l.slice(0, 300));
  }

  it(`refuses parameters nested 5,000 levels deep at spec.parameters, naming the limit (${MAX_PARAMETERS_DEPTH})`, async () => {
    const res = await createRaw('deep', nestedJson(5_000));
    expect(res.code).toBe(422);
    const status = JSON.parse(res.body) as { message: string; details?: { causes?: { field: string }[] } };
    expect(status.details?.causes?.map((c) => c.field)).toEqual(['spec.parameters']);
    expect(status.message).toContain(`nested more than ${MAX_PARAMETERS_DEPTH} levels deep`);
    expect(status.message).not.toContain('RangeError');
  });

  it('refuses parameters just over the depth limit the same way', async () => {
    const res = await createRaw('deep-ish', nestedJson(MAX_PARAMETERS_DEPTH));
    expect(res.code).toBe(422);
    expect(res.body).toContain(`nested more than ${MAX_PARAMETERS_DEPTH} levels deep`);
  });

  it('refuses parameters larger than the size limit at spec.parameters', async () => {
    const big = 'x'.repeat(4096);
    const command = Array.from({ length: Math.ceil(MAX_PARAMETERS_BYTES / 4096) + 1 }, () => big).slice(
      0,
      64,
    );
    const chunks = Math.ceil(MAX_PARAMETERS_BYTES / (64 * 4096)) + 1;
    const parameters = Object.fromEntries(Array.from({ length: chunks }, (_, i) => [`p${i}`, command]));
    const d = await denial(
      w.operation(w.as('mallory'), a, 'huge', {
        type: 'RunCommand',
        engine: 'job',
        targetRef: { name: 'shop' },
        parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'], ...parameters },
      }),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.parameters']);
    expect(d.message).toContain(`larger than ${MAX_PARAMETERS_BYTES} bytes`);
  });

  it('answers a body over the server limit with 413 and a readable body, not a connection reset', async () => {
    const config = await w.admin.request<{
      webhooks: { clientConfig: { url: string; caBundle: string } }[];
    }>({
      method: 'GET',
      path: `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/vworkspace-security-${w.id}`,
    });
    const hook = config.webhooks[0];
    if (!hook) throw new Error('the world registered no validating webhook');
    const body = Buffer.alloc(MAX_ADMISSION_BODY_BYTES + 1024 * 1024, 0x20);
    const res = await post(hook.clientConfig.url, body, {
      ca: Buffer.from(hook.clientConfig.caBundle, 'base64'),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.code).toBe(413);
    expect(res.body).toContain(`${MAX_ADMISSION_BODY_BYTES} bytes`);
  });

  it('gives 5,000- and 9,992-deep Operations stored where the webhooks do not run a condition, without a loop or a crash', async () => {
    const ns = await unjudged();
    const image = JSON.stringify(RUNCOMMAND_IMAGES[0]);
    // 9,992: the deepest spec.parameters the API server stores (its JSON decoder stops at 10,000 levels
    // for the whole object); 5,000: the depth of the issue. The deepest goes first, while the operator's
    // code that walks objects is still cold (a warm, optimised recursion got further).
    const ops = { 'deep-1': 9_992, 'deep-2': 5_000 };
    for (const [name, depth] of Object.entries(ops)) {
      const res = await createRaw(name, `{"image":${image},"deep":${nestedJson(depth)}}`, ns);
      expect(res.code).toBe(201);
    }
    for (const name of Object.keys(ops)) {
      const op = await w.waitFor(`${name} to get a condition`, async () => {
        const o = await w.getOperation(ns, name);
        return o.status?.conditions?.find((c) => c.type === 'Accepted') ? o : undefined;
      });
      expect(op.status?.phase).toBe('Failed');
      const accepted = op.status?.conditions?.find((c) => c.type === 'Accepted');
      expect(accepted).toMatchObject({ status: 'False', reason: 'NotAdmitted' });
      expect(accepted?.message).toContain(`select namespace ${ns}; then create the Operation again`);
    }
    // Everyone else's Operations are still reconciled: mallory's dry run in a runs to its end.
    await w.grantProfile('runCommand.job', a);
    await w.operation(w.as('mallory'), a, 'neighbour', {
      type: 'RunCommand',
      engine: 'job',
      targetRef: { name: 'shop' },
      parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
      policy: { dryRun: true, requireReady: false },
    });
    await w.waitFor(
      'the neighbour to finish',
      async () => (await w.getOperation(a, 'neighbour')).status?.phase === 'Succeeded',
    );
    // Nothing failed on the way (no retried list or watch, no failed reconcile), and the operator is up.
    expect(complaints(ns)).toEqual([]);
    expect(w.operator.crashed).toBe(false);
  });

  it('gives a CronOperation with a template that deep Ready=False with what to do, and creates nothing', async () => {
    const ns = await unjudged();
    const template = `{"type":"RunCommand","engine":"job","targetRef":{"name":"shop"},"parameters":{"image":${JSON.stringify(RUNCOMMAND_IMAGES[0])},"deep":${nestedJson(9_980)}}}`;
    const res = await postAsMallory(
      `/apis/ops.vworkspace.io/v1alpha1/namespaces/${ns}/cronoperations`,
      `{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"CronOperation","metadata":{"name":"deep-cron"},"spec":{"schedule":"* * * * *","operationTemplate":{"spec":${template}}}}`,
    );
    expect(res.code).toBe(201);
    const ready = await w.waitFor('deep-cron to say it cannot run', async () => {
      const c = await w.admin.request<{
        status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
      }>({
        method: 'GET',
        path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${ns}/cronoperations/deep-cron`,
      });
      return c.status?.conditions?.find((x) => x.type === 'Ready');
    });
    expect(ready).toMatchObject({ status: 'False', reason: 'InvalidOperationTemplate' });
    expect(ready.message).toContain(
      'spec.operationTemplate.spec.parameters: Invalid value: nested more than',
    );
    const created = await w.admin.request<{ items: unknown[] }>({
      method: 'GET',
      path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${ns}/operations`,
      query: { labelSelector: 'ops.vworkspace.io/cron-operation=deep-cron' },
    });
    expect(created.items).toEqual([]);
    expect(complaints(ns)).toEqual([]);
    expect(w.operator.crashed).toBe(false);
  });
});
