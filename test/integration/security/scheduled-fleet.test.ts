// Fleets, parameters from the trigger and run-now on exactly the CSV's RBAC (issue 28, item A;
// docs/adr/0025-what-a-scheduler-produces.md). The webhook used to admit an Operation the operator creates
// for a CronOperation/WatchOperation only when its spec equalled operationTemplate.spec, so every
// Operation with a chosen target (fleet, WatchOperation) or a substituted parameter was answered 503 for
// ever while the controller retried in silence. Now the webhook recomputes what the scheduler produces
// for that target and trigger and admits exactly that; anything else is refused (403) and the refusal is
// a condition and an Event.

import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  ANNOTATION_RUN_NOW,
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_TRIGGER,
} from '../../../operator/src/api/annotations.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { jobRunCommand, RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { actsForAnnotation } from '../../../operator/src/identity/acts-for.ts';
import { testClient } from '../../support/clients.ts';
import { startWorld, type World } from './harness.ts';
import {
  APPS,
  annotate,
  createScheduler,
  eventAbout,
  getScheduler,
  labelledInstance,
  mergePatch,
  OPS,
  ownedOperation,
  ownedOperations,
  readyOf,
  type Scheduler,
} from './schedule-support.ts';
import { adminServiceAccount } from './support.ts';

// job-runcommand with string parameters a trigger can fill (the Job ignores them; the Operation shows them).
const TEMPLATE = 'annotated-runcommand';
const catalog = YAML.stringify({
  templates: [
    {
      ...jobRunCommand,
      name: TEMPLATE,
      inputSchema: {
        ...jobRunCommand.inputSchema,
        properties: {
          ...(jobRunCommand.inputSchema as { properties: Record<string, unknown> }).properties,
          version: { type: 'string', maxLength: 63 },
          reason: { type: 'string', maxLength: 63 },
          request: { type: 'string', maxLength: 256 },
          at: { type: 'string', maxLength: 64 },
        },
      },
    },
  ],
});

const NEVER = '0 0 1 1 *'; // once a year: these CronOperations run on request only
const VERSION = "object.metadata.annotations['example.com/version']";
const template = (extra: Record<string, unknown> = {}) => ({
  spec: {
    type: 'RunCommand',
    engine: 'job',
    template: TEMPLATE,
    parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
    ...extra,
  },
});

const started = (ops: Operation[]) => ops.filter((o) => o.status?.childRef !== undefined);

describe('fleets, trigger parameters and run-now on the CSV RBAC', () => {
  let w: World;
  let a: string;

  async function runNowAndWait(name: string, value: string, count: number): Promise<Operation[]> {
    await annotate(w.as('alice'), `${OPS}/namespaces/${a}/cronoperations/${name}`, {
      [ANNOTATION_RUN_NOW]: value,
    });
    const cron = await getScheduler(w, a, 'cronoperations', name);
    return w.waitFor(`${count} started Operation(s) of ${name}`, async () => {
      const ops = started(await ownedOperations(w, a, cron));
      return ops.length >= count ? ops : undefined;
    });
  }

  beforeAll(async () => {
    w = await startWorld({ catalog });
    [a] = w.namespaces;
    await labelledInstance(
      w,
      a,
      'web-1',
      { tier: 'web', 'example.com/sa': 'vworkspace-runner' },
      {
        'ops.vworkspace.io/runcommand': 'job',
        'example.com/version': '1.0.0',
      },
    );
    await labelledInstance(
      w,
      a,
      'web-2',
      { tier: 'web', 'example.com/sa': 'powerful' },
      {
        'ops.vworkspace.io/runcommand': 'job',
        'example.com/version': '2.0.0',
      },
    );
    await labelledInstance(w, a, 'db', { tier: 'db' }, { 'ops.vworkspace.io/runcommand': 'job' });
    await adminServiceAccount(w, a, 'powerful');
    await w.grantProfile('runCommand.job', a);
    await w.grant('alice', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['cronoperations', 'watchoperations', 'operations'],
        verbs: ['create', 'get', 'list', 'update', 'patch'],
      },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('a fleet CronOperation run now creates and starts one Operation per matching instance, with its substitutions', async () => {
    await createScheduler(w.as('alice'), a, 'cronoperations', 'fleet', {
      schedule: NEVER,
      targetSelector: { matchLabels: { tier: 'web' } },
      parametersFromTrigger: [
        { parameter: 'version', from: VERSION },
        { parameter: 'reason', from: 'trigger.reason' },
        { parameter: 'request', from: 'trigger.request' },
        { parameter: 'at', from: 'trigger.scheduledTime' },
      ],
      operationTemplate: template(),
    });
    const ops = await runNowAndWait('fleet', 'go-1', 2);
    const byTarget = Object.fromEntries(ops.map((o) => [o.spec.targetRef.name, o.spec.parameters]));
    expect(Object.keys(byTarget).sort()).toEqual(['web-1', 'web-2']);
    expect(byTarget['web-1']).toMatchObject({ version: '1.0.0', reason: 'manual', request: 'go-1' });
    expect(byTarget['web-2']).toMatchObject({ version: '2.0.0', reason: 'manual', request: 'go-1' });
    expect(String(byTarget['web-1']?.at)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(ops.every((o) => o.metadata.annotations?.[ANNOTATION_TRIGGER] === 'manual')).toBe(true);
    const cron = await getScheduler(w, a, 'cronoperations', 'fleet');
    expect(readyOf(cron)).toMatchObject({ status: 'True', reason: 'ScheduleActive' });
    expect(cron.status?.manualRun).toMatchObject({ request: 'go-1', phase: 'Created' });
  });

  it('a one-target CronOperation with parametersFromTrigger runs now with the values of its target', async () => {
    await createScheduler(w.as('alice'), a, 'cronoperations', 'single', {
      schedule: NEVER,
      parametersFromTrigger: [
        { parameter: 'version', from: VERSION },
        { parameter: 'request', from: 'trigger.request' },
      ],
      operationTemplate: template({ targetRef: { name: 'web-2' } }),
    });
    const [op] = await runNowAndWait('single', 'deploy-2.0.0', 1);
    expect(op?.spec.targetRef.name).toBe('web-2');
    expect(op?.spec.parameters).toMatchObject({ version: '2.0.0', request: 'deploy-2.0.0' });
    expect(op?.status?.conditions?.find((c) => c.type === 'Accepted')?.status).toBe('True');
  });

  it('a WatchOperation maps the changed field into a parameter of the Operation it starts', async () => {
    await createScheduler(w.as('alice'), a, 'watchoperations', 'on-chart', {
      selector: { matchLabels: { tier: 'web' } },
      triggers: { fieldPaths: ['spec.appRef.chart.version'] },
      parametersFromTrigger: [
        { parameter: 'version', from: 'object.spec.appRef.chart.version' },
        { parameter: 'reason', from: 'trigger.reason' },
        { parameter: 'at', from: 'trigger.time' },
      ],
      operationTemplate: template(),
    });
    // The first sighting of each instance is its baseline; then a change of the watched field triggers.
    await w.waitFor('the baseline of both instances', async () => {
      const s = (await getScheduler(w, a, 'watchoperations', 'on-chart')) as Scheduler & {
        status?: { targets?: { fieldsHash?: string }[] };
      };
      return (s.status?.targets ?? []).filter((t) => t.fieldsHash).length === 2;
    });
    await mergePatch(w.admin, `${APPS}/namespaces/${a}/applicationinstances/web-1`, {
      spec: { appRef: { chart: { version: '1.1.0' } } },
    });
    const watch = await getScheduler(w, a, 'watchoperations', 'on-chart');
    const [op] = await w.waitFor('a started Operation of on-chart', async () => {
      const ops = started(await ownedOperations(w, a, watch));
      return ops.length > 0 ? ops : undefined;
    });
    expect(op?.spec.targetRef.name).toBe('web-1');
    expect(op?.spec.parameters).toMatchObject({
      version: '1.1.0',
      reason: 'field:spec.appRef.chart.version',
    });
    expect(readyOf(await getScheduler(w, a, 'watchoperations', 'on-chart'))?.status).toBe('True');
  });

  it('a ServiceAccount taken from a label is judged as anyone’s: outside the template’s list the run is refused, loudly', async () => {
    await createScheduler(w.as('alice'), a, 'cronoperations', 'as-label', {
      schedule: NEVER,
      targetSelector: { matchLabels: { tier: 'web' } },
      parametersFromTrigger: [
        { parameter: 'serviceAccountName', from: "object.metadata.labels['example.com/sa']" },
      ],
      operationTemplate: template(),
    });
    const [op] = await runNowAndWait('as-label', 'now', 1);
    expect(op?.spec.targetRef.name).toBe('web-1');
    const cron = await w.waitFor('as-label to say web-2 was refused', async () => {
      const c = await getScheduler(w, a, 'cronoperations', 'as-label');
      return readyOf(c)?.reason === 'OperationRefused' ? c : undefined;
    });
    expect(readyOf(cron)?.message).toContain('spec.parameters.serviceAccountName');
    expect(readyOf(cron)?.message).toContain('powerful');
    expect((await ownedOperations(w, a, cron)).map((o) => o.spec.targetRef.name)).toEqual(['web-1']);
    expect((await eventAbout(w, a, 'as-label', 'OperationRefused')).type).toBe('Warning');
  });

  it("refuses, at the field, an Operation the operator's own identity creates that its owner does not produce", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(w.operatorKubeconfigPath);
    const operator = testClient(kc);
    const fleet = await getScheduler(w, a, 'cronoperations', 'fleet');
    const slot = { [ANNOTATION_SCHEDULED_TIME]: '2026-01-01T00:00:00Z' };
    const create = (name: string, spec: Record<string, unknown>) =>
      ownedOperation(
        operator,
        a,
        name,
        { kind: 'CronOperation', name: 'fleet', uid: fleet.metadata.uid },
        spec,
        // Whom the scheduler's Operations act for, as the operator writes it: only the tested field differs.
        { ...slot, ...actsForAnnotation(fleet, slot) },
      );
    const params = (version: string) => ({
      image: RUNCOMMAND_IMAGES[0],
      command: ['true'],
      version,
      reason: 'schedule',
      at: '2026-01-01T00:00:00Z',
    });
    const base = { type: 'RunCommand', engine: 'job', template: TEMPLATE };
    // Not the value web-1 carries.
    const value = await w.denial(
      create('forged-value', { ...base, targetRef: { name: 'web-1' }, parameters: params('6.6.6') }),
    );
    expect(value.code).toBe(403);
    expect(value.causes.map((c) => c.field)).toEqual(['spec.parameters.version']);
    // An instance the selector does not pick.
    const target = await w.denial(
      create('forged-target', { ...base, targetRef: { name: 'db' }, parameters: params('') }),
    );
    expect(target.code).toBe(403);
    expect(target.causes.map((c) => c.field)).toContain('spec.targetRef.name');
    expect(target.message).toContain('spec.targetSelector');
  });
});
