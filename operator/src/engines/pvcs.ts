// The per-PVC engines (volsync, snapshot) create one child per PersistentVolumeClaim of the release.
import { LABEL_HELM_INSTANCE } from '../api/annotations.ts';
import { releaseOf } from './names.ts';
import type { MaterializeInput } from './types.ts';

/** The release's PVCs, sorted and deduplicated; or the failure to report when there are none. */
export function releasePvcs(
  input: Pick<MaterializeInput, 'target' | 'env' | 'op'>,
  engine: string,
): { ok: true; pvcs: string[] } | { ok: false; reason: string; message: string } {
  const pvcs = [...new Set(input.env.pvcs ?? [])].sort();
  if (pvcs.length > 0) return { ok: true, pvcs };
  const release = releaseOf(input.target);
  return {
    ok: false,
    reason: 'CapabilityMissing',
    message: `the ${engine} engine works per PersistentVolumeClaim, and namespace ${input.op.metadata.namespace ?? ''} has none labelled ${LABEL_HELM_INSTANCE}=${release.name}; use an engine that does not need volumes (e.g. velero) or check the release`,
  };
}
