// A CNCF distribution registry (bin/registry, built by hack/build-tools.sh images) on a free loopback
// port, storing blobs in a temp dir, for hack/images.ts, hack/mirror.ts and the image tests. Plain
// HTTP on 127.0.0.1: crane, opm (--use-http) and containers/image treat it as an insecure registry.
// It runs under hack/lib/reaper.sh (hack/lib/process.ts), so it dies with the process that started it.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, freePort } from './controlplane.ts';
import { running, startProcess, stopProcess, tailFile } from './process.ts';

export interface RegistryOptions {
  /** Storage and config directory (default: a new temp dir, removed on stop unless `keep`). */
  dir?: string;
  /** Keep the directory on stop. Default: env VWS_KEEP_CLUSTER === '1'. */
  keep?: boolean;
  /** A name for logs (`<dir>/registry.log`) and messages. */
  name?: string;
}

export interface Registry {
  /** `127.0.0.1:<port>`: the host part of image references. */
  host: string;
  /** `http://127.0.0.1:<port>` */
  url: string;
  dir: string;
  logPath: string;
  stop(): Promise<void>;
}

/** The registry's config file: filesystem storage, deletes allowed, loopback only, no access log. */
export function registryConfig(addr: string, storageDir: string, secret: string): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    '  formatter: text',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${storageDir}`,
    '  delete:',
    '    enabled: true',
    '  maintenance:',
    '    uploadpurging:',
    '      enabled: false',
    'http:',
    `  addr: ${addr}`,
    `  secret: ${secret}`,
    '',
  ].join('\n');
}

/** Resolves with the HTTP status of GET <url>/v2/ (0 when nothing answers). */
async function ping(url: string): Promise<number> {
  try {
    const res = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

export async function startRegistry(opts: RegistryOptions = {}): Promise<Registry> {
  const bin = join(BIN, 'registry');
  if (!existsSync(bin))
    throw new Error(`${bin} is missing: run \`make tools\` (hack/build-tools.sh images) to build it`);
  const name = opts.name ?? 'registry';
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), `vws-${name}-`)));
  const keep = opts.keep ?? process.env.VWS_KEEP_CLUSTER === '1';
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const url = `http://${host}`;
  const configPath = join(dir, 'config.yml');
  await writeFile(configPath, registryConfig(host, join(dir, 'data'), randomBytes(16).toString('hex')));
  const logPath = join(dir, 'registry.log');
  const proc = startProcess(name, bin, ['serve', configPath], logPath, {
    ...process.env,
    // distribution v3 reports to a tracing endpoint when one is configured in the environment
    OTEL_TRACES_EXPORTER: 'none',
  });
  const stop = async () => {
    await stopProcess(proc);
    if (!keep && !opts.dir) await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (!running(proc)) {
      await stop();
      throw new Error(`${name} exited with code ${proc.child.exitCode}; log:\n${tailFile(logPath)}`);
    }
    if ((await ping(url)) === 200) break;
    if (Date.now() > deadline) {
      const log = tailFile(logPath);
      await stop();
      throw new Error(`${name} did not answer ${url}/v2/ within 30 s; log:\n${log}`);
    }
    await sleep(100);
  }
  return { host, url, dir, logPath, stop };
}
