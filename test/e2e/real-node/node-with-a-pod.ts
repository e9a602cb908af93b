// Starts a real node and a pod running `sleep 600`, prints `POD <host pid>`, then waits to be killed
// (killed-run.test.ts SIGKILLs it: nothing of this process gets to clean up, only the node's guard).
import { startRealNode } from '../../../hack/lib/real-node.ts';

const node = await startRealNode({ log: (l) => process.stdout.write(`${l}\n`) });
process.stdout.write(`UP ${node.workdir}\n`);
await node.client.request({
  method: 'POST',
  path: '/api/v1/namespaces/default/pods',
  body: {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'sleeper' },
    spec: { containers: [{ name: 'sleeper', image: node.images.busybox, command: ['sleep', '600'] }] },
  },
});
for (;;) {
  const [pid] = node.podProcesses((argv) => argv.join(' ') === 'sleep 600');
  if (pid) {
    process.stdout.write(`POD ${pid}\n`);
    break;
  }
  await new Promise((r) => setTimeout(r, 500));
}
await new Promise(() => {});
