// Argo Workflows' two images, assembled daemonless and reproducibly (hack/images/oci.ts) from the static
// binaries `hack/build-tools.sh argo` put in bin/ (Argo's own images are distroless/static with the
// binary in /bin; these are the same with our passwd/group instead of distroless's):
//
//   <registry>/argo-workflow-controller:<ARGO_WORKFLOWS_VERSION>   /bin/workflow-controller
//   <registry>/argo-argoexec:<ARGO_WORKFLOWS_VERSION>              /bin/argoexec: the executor of every
//       workflow pod (init copies itself into /var/run/argo, `emissary` wraps the step's command, wait
//       reports the outputs); the controller runs it by name, so it must be on the image's PATH.
//
// Both run as the nonroot user (upstream's nonroot images use 8737; any non-zero uid works).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { TarEntry } from '../archive.ts';
import { type BuiltImage, sourceDate } from '../build.ts';
import { fileEntry, NONROOT, userlandEntries } from '../contents.ts';
import { pinned } from '../node-images.ts';
import { assembleImage, buildLayer, type ImageSpec, LayerCache } from '../oci.ts';

export interface ArgoImages {
  controller: BuiltImage;
  executor: BuiltImage;
}

export interface ArgoImagePlan {
  repo: string;
  /** Files from bin/ and where they go in the image. */
  files: { bin: string; path: string }[];
  spec: Omit<ImageSpec, 'created'>;
}

/** What goes into each image (pure): the layer's files and the image config. */
export function argoImagePlans(): { controller: ArgoImagePlan; executor: ArgoImagePlan } {
  const user = `${NONROOT}:${NONROOT}`;
  return {
    controller: {
      repo: 'argo-workflow-controller',
      files: [{ bin: 'workflow-controller', path: 'bin/workflow-controller' }],
      spec: { user, env: ['PATH=/bin'], entrypoint: ['/bin/workflow-controller'] },
    },
    executor: {
      repo: 'argo-argoexec',
      files: [{ bin: 'argoexec', path: 'bin/argoexec' }],
      spec: { user, env: ['PATH=/bin'], entrypoint: ['argoexec'] },
    },
  };
}

function build(registry: string, plan: ArgoImagePlan, tag: string, epoch?: string): BuiltImage {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
  const { created, mtime } = sourceDate(version, epoch);
  const entries: TarEntry[] = [
    ...plan.files.map((f) => fileEntry(join(ROOT, 'bin', f.bin), f.path, 0o755)),
    ...userlandEntries(),
  ];
  // The binaries are ~80 and ~110 MB: their gzip blobs are kept (bin/.layer-cache, as the operator
  // image's Node layer) so later runs only hash them.
  const cache = LayerCache.fromEnv(join(ROOT, 'bin/.layer-cache'));
  const layer = buildLayer(`${plan.repo} ${tag}`, entries, { mtime, ...(cache ? { cache } : {}) });
  const image = assembleImage([layer], { created, ...plan.spec });
  return {
    name: plan.repo,
    repo: `${registry}/${plan.repo}`,
    tag,
    image,
    digest: image.digest,
    ref: `${registry}/${plan.repo}@${image.digest}`,
  };
}

/** Both images for `registry` (e.g. the real node's registryPrefix), tagged with the pinned version. */
export function argoImages(registry: string, epoch?: string): ArgoImages {
  const tag = pinned('ARGO_WORKFLOWS_VERSION');
  const plans = argoImagePlans();
  return {
    controller: build(registry, plans.controller, tag, epoch),
    executor: build(registry, plans.executor, tag, epoch),
  };
}
