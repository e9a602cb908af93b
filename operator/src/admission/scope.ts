// The install mode, at admission: an operator that watches only some namespaces (WATCH_NAMESPACE, from
// OLM's OperatorGroup targets) would never run an Operation, CronOperation or WatchOperation created
// anywhere else, so it refuses to create one there, saying which namespaces it watches. Updates outside
// are not judged at all (another install may own that namespace); OLM already scopes the webhook
// configuration to the OperatorGroup's namespaces, this holds for installs without OLM too. Pure.
import { type AdmissionRequest, type AdmissionResponse, allow, forbid } from './review.ts';

/** Whether `namespace` is watched: an empty list means every namespace. */
export function watches(watched: readonly string[], namespace: string | undefined): boolean {
  return watched.length === 0 || (namespace !== undefined && watched.includes(namespace));
}

/** The response for a request outside the watched namespaces, or undefined to judge it as usual. */
export function outsideScope(
  req: AdmissionRequest,
  watched: readonly string[],
): AdmissionResponse | undefined {
  if (watches(watched, req.namespace)) return undefined;
  if (req.operation !== 'CREATE') return allow(req.uid);
  return forbid(
    req.uid,
    `namespace ${JSON.stringify(req.namespace ?? '')} is not watched by this vworkspace-operator (it watches ${watched.join(', ')}): nothing would run this ${req.kind.kind}. Create it in a watched namespace, or add the namespace to the operator's OperatorGroup (spec.targetNamespaces).`,
  );
}
