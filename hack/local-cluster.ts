// Starts the same real control plane the integration tests use (etcd + kube-apiserver with the
// project's and upstream CRDs) for a person, prints the kubeconfig path and waits for Ctrl-C.
//   make local-cluster        (or: node hack/local-cluster.ts [--dir DIR])
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { startControlPlane } from './lib/controlplane.ts';

const dirFlag = process.argv.indexOf('--dir');
const dir = dirFlag > 0 ? resolve(process.argv[dirFlag + 1] ?? '.cache/local-cluster') : undefined;
if (dir) await mkdir(dir, { recursive: true });
const cp = await startControlPlane(dir ? { dir } : {});
process.stdout.write(
  `control plane ready: ${cp.server}\n  export KUBECONFIG=${cp.kubeconfigPath}\n  logs: ${cp.dir}/*.log\nCtrl-C stops it.\n`,
);
const stop = async () => {
  await cp.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
