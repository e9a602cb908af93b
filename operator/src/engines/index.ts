// The engine adapters, one per engine (DESIGN §4), behind one lookup.
import type { Engine } from '../api/enums.ts';
import { helmAdapter } from './helm.ts';
import { helmHookJobAdapter } from './helm-hook-job.ts';
import { jobAdapter } from './job.ts';
import { snapshotAdapter } from './snapshot.ts';
import type { EngineAdapter } from './types.ts';
import { veleroAdapter } from './velero.ts';
import { volsyncAdapter } from './volsync.ts';
import { workflowAdapter } from './workflow.ts';

export const ADAPTERS: Readonly<Record<Engine, EngineAdapter>> = {
  velero: veleroAdapter,
  workflow: workflowAdapter,
  job: jobAdapter,
  helm: helmAdapter,
  helmHookJob: helmHookJobAdapter,
  volsync: volsyncAdapter,
  snapshot: snapshotAdapter,
};

export function adapterFor(engine: Engine): EngineAdapter {
  return ADAPTERS[engine];
}

export { ANNOTATION_ATTEMPT, ANNOTATION_PVC, childName, operationOwnerReference } from './names.ts';
export type * from './types.ts';
