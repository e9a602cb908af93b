// Hole 12 of issue 28: terminal escapes. A workflow node's message is text whoever runs the step writes;
// the operator copied it into the Operation's status and `kubectl vws status` printed it raw, so ESC
// sequences retitled, recoloured or cleared the reader's terminal, and its size was unbounded. Now the
// operator keeps a printable, bounded message, and the CLI strips control characters from everything it
// prints.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../../hack/lib/controlplane.ts';
import { startWorld, type World } from './harness.ts';
import { childrenOf, settled } from './support.ts';

const run = promisify(execFile);
const ESC = '\u001b';
const hostile = `step failed ${ESC}]0;pwned${ESC}\\${ESC}[2J${ESC}[31mred\u202e${'A'.repeat(100_000)}`;

describe('untrusted messages reach status bounded and the terminal without control characters', () => {
  let w: World;
  let a: string;
  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runbook: 'workflow' });
    await w.grantProfile('runbook.workflow', a);
    await w.grant('alice', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runbook'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('a workflow node message with ESC sequences and 100 KB', async () => {
    await w.operation(w.as('alice'), a, 'escapes', {
      type: 'Runbook',
      engine: 'workflow',
      targetRef: { name: 'shop' },
      parameters: { workflowTemplateRef: { name: 'anything' } },
    });
    await settled(w, a, 'escapes');
    const path = `/apis/argoproj.io/v1alpha1/namespaces/${a}/workflows`;
    const wf = await w.waitFor(
      'the Workflow',
      async () => (await childrenOf(w, path, 'escapes').catch(() => []))[0],
    );
    // What Argo would write for a step whose container printed the hostile text as its termination message.
    await w.admin.request({
      method: 'PATCH',
      path: `${path}/${wf.metadata?.name}`,
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          phase: 'Failed',
          nodes: {
            n1: { id: 'n1', name: 'n1', displayName: 'main', type: 'Pod', phase: 'Failed', message: hostile },
          },
        },
      },
    });
    const op = await w.waitFor('the Operation to fail', async () => {
      const o = await w.getOperation(a, 'escapes');
      return o.status?.phase === 'Failed' ? o : undefined;
    });
    const message = op.status?.conditions?.find((c) => c.type === 'Succeeded')?.message ?? '';
    expect(message).toContain('step failed');
    expect(message).not.toContain(ESC);
    expect(message).not.toContain('\u202e');
    expect(message.length).toBeLessThan(2_000);

    const cli = await run(
      join(ROOT, 'node_modules/.bin/node'),
      [join(ROOT, 'operator/src/cli/kubectl-vws.ts'), 'status', 'escapes', '-n', a],
      { env: { ...process.env, KUBECONFIG: w.kubeconfigPath } },
    );
    expect(cli.stdout).toContain('step failed');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters
    expect(cli.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });
});
