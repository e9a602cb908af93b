import { describe, expect, it } from 'vitest';
import { argoImagePlans } from './argo.ts';

describe('Argo images', () => {
  it('the controller and the executor: one static binary each in /bin, nonroot, argoexec on PATH', () => {
    const { controller, executor } = argoImagePlans();
    expect(controller).toMatchObject({
      repo: 'argo-workflow-controller',
      files: [{ bin: 'workflow-controller', path: 'bin/workflow-controller' }],
      spec: { user: '65532:65532', entrypoint: ['/bin/workflow-controller'] },
    });
    // The controller starts the executor's init and wait containers as `argoexec <cmd>`: by name.
    expect(executor).toMatchObject({
      repo: 'argo-argoexec',
      files: [{ bin: 'argoexec', path: 'bin/argoexec' }],
      spec: { user: '65532:65532', env: ['PATH=/bin'], entrypoint: ['argoexec'] },
    });
  });
});
