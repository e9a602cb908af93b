// OpenShift releases and the Kubernetes minor each ships, so `com.redhat.openshift.versions` (bundle
// annotation) and the community catalogs (catalogs/v4.x/) follow from the CSV's minKubeVersion instead of
// being a second, drifting statement of the same floor.
//
// The pairs up to 4.17 are those the community pipeline's own check uses (operator-pipelines,
// operatorcert/static_tests/community/bundle.py, OCP_TO_K8S, from https://access.redhat.com/solutions/4870701);
// 4.18-4.20 are from the OpenShift release notes (4.18: 1.31, 4.19: 1.32, 4.20: 1.33). The pipeline maps
// an OpenShift release newer than its table to the newest it knows, so a floor of 4.17 passes its check
// for every later release too.
export const OPENSHIFT_KUBERNETES: readonly (readonly [openshift: string, kubernetes: string])[] = [
  ['4.12', '1.25'],
  ['4.13', '1.26'],
  ['4.14', '1.27'],
  ['4.15', '1.28'],
  ['4.16', '1.29'],
  ['4.17', '1.30'],
  ['4.18', '1.31'],
  ['4.19', '1.32'],
  ['4.20', '1.33'],
];

/** `1.30.0` / `v1.30` → [1, 30] (major and minor; a patch level never changes which release ships it). */
export function minorOf(version: string): [number, number] {
  const m = /^v?(\d+)\.(\d+)(?:\.\d+)?$/.exec(version.trim());
  if (!m) throw new Error(`${JSON.stringify(version)} is not a version (x.y or x.y.z)`);
  return [Number(m[1]), Number(m[2])];
}

function atLeast(a: [number, number], b: [number, number]): boolean {
  return a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]);
}

/** The OpenShift releases whose Kubernetes is at least minKubeVersion, oldest first. */
export function openshiftReleasesFor(minKubeVersion: string): string[] {
  const floor = minorOf(minKubeVersion);
  const out = OPENSHIFT_KUBERNETES.filter(([, kube]) => atLeast(minorOf(kube), floor)).map(([ocp]) => ocp);
  if (out.length === 0)
    throw new Error(
      `no known OpenShift release ships Kubernetes ${minKubeVersion}: add it to OPENSHIFT_KUBERNETES`,
    );
  return out;
}

/**
 * `com.redhat.openshift.versions`: "v4.17" means 4.17 and every later release (the pipeline's and
 * OpenShift's index-selection syntax), which is exactly "Kubernetes ≥ minKubeVersion".
 */
export function openshiftVersionsAnnotation(minKubeVersion: string): string {
  return `v${openshiftReleasesFor(minKubeVersion)[0]}`;
}

/** The community repository's catalog directories this bundle belongs in: v4.17, v4.18, … */
export function communityCatalogs(minKubeVersion: string): string[] {
  return openshiftReleasesFor(minKubeVersion).map((v) => `v${v}`);
}
