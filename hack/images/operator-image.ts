// The operator image as the daemonless build makes it: the same image the `Dockerfile` describes
// (docs/adr/0045-one-operator-image-recipe.md). The Dockerfile's final stage is FROM
// gcr.io/distroless/nodejs24-debian12:nonroot, which cannot be pulled on these machines, so the first
// layer is our stand-in for that base (contents.ts nodeRuntime: Node at /nodejs/bin/node, its shared
// libraries, the CA bundle, distroless's users); then one layer per COPY of the final stage, in its
// order and to its destination, and the config the Dockerfile's instructions give on top of the base's.
// hack/images/same-image.test.ts parses the Dockerfile and fails when the two differ.
import { join } from 'node:path';
import { operatorNodeArgs } from '@vworkspace/operator';
import { PACKAGE_NAME } from '../packaging/csv.ts';
import {
  CA_BUNDLE,
  fileEntry,
  NODE_BINARY,
  NONROOT,
  nodeRuntime,
  productionNodeModules,
  sourceTree,
  WORKSPACE_PACKAGES,
} from './contents.ts';
import type { ImagePlan } from './oci.ts';

/** WORKDIR /app */
export const APP_DIR = 'app';
export const SOURCE = 'https://github.com/vworkspace/vworkspace-operator';

/**
 * The operator image of `version`: the base stand-in, then the Dockerfile's COPYs (production
 * node_modules (with npm's links to the workspace packages), package.json, each workspace package's package.json and src/,
 * operator/; no tests), user 65532, node with the operator's flags.
 * `root` is the working tree whose node_modules and sources go in.
 */
export function operatorPlan(root: string, version: string, created: string): ImagePlan {
  const runtime = nodeRuntime(join(root, 'node_modules/node/bin/node'));
  return {
    layers: [
      {
        name: 'base: Node 24 (npm package node), its shared libraries, CA certificates, users',
        entries: runtime.entries,
        cached: true,
      },
      {
        name: 'COPY --from=deps /app/node_modules',
        entries: productionNodeModules(root, APP_DIR),
      },
      {
        name: 'COPY package.json',
        entries: [fileEntry(join(root, 'package.json'), `${APP_DIR}/package.json`, 0o644)],
      },
      ...WORKSPACE_PACKAGES.flatMap((name) => [
        {
          name: `COPY packages/${name}/package.json`,
          entries: [
            fileEntry(
              join(root, `packages/${name}/package.json`),
              `${APP_DIR}/packages/${name}/package.json`,
              0o644,
            ),
          ],
        },
        { name: `COPY packages/${name}/src/`, entries: sourceTree(root, `packages/${name}/src`, APP_DIR) },
      ]),
      { name: 'COPY operator/', entries: sourceTree(root, 'operator', APP_DIR) },
    ],
    spec: {
      created,
      user: `${NONROOT}:${NONROOT}`,
      workingDir: `/${APP_DIR}`,
      entrypoint: [`/${NODE_BINARY}`, ...operatorNodeArgs()],
      // The base's PATH and SSL_CERT_FILE, then the Dockerfile's ENV.
      env: [
        'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        `SSL_CERT_FILE=/${CA_BUNDLE}`,
        'NODE_ENV=production',
      ],
      exposedPorts: ['8080/tcp', '8081/tcp', '9443/tcp'],
      labels: {
        'org.opencontainers.image.title': PACKAGE_NAME,
        'org.opencontainers.image.description': 'Day-2 operations for Helm-deployed applications',
        'org.opencontainers.image.source': SOURCE,
        'org.opencontainers.image.licenses': 'Apache-2.0',
        'org.opencontainers.image.version': version,
        // Only the daemonless build has these two (same-image.test.ts names them).
        'org.opencontainers.image.created': created,
        'io.vworkspace.image.runtime-libraries': runtime.packages,
      },
    },
  };
}
