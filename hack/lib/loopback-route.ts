// Makes every address of a CIDR local to this machine (`ip route add local <cidr> dev lo`), so a host
// process can listen on any of them. The e2e tests give kwok pods IPs from such a range: the API
// server then reaches "a pod" (a webhook Service's endpoint) at an address a host process serves.
// Loopback addresses themselves (127.0.0.0/8) cannot be used: EndpointSlice validation rejects them.
//
// Needs CAP_NET_ADMIN (root). The route is removed on release(), and by a guard process
// (hack/lib/process.ts) when this process dies first, so no route outlives the test run.
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Proc, startGuard, stopProcess } from './process.ts';

const run = promisify(execFile);

/** A random /24 of 198.18.0.0/15 (RFC 2544 benchmarking space: never routed, free on any LAN). */
export function randomBenchmarkCidr(): string {
  return `198.${randomInt(18, 20)}.${randomInt(0, 256)}.0/24`;
}

export interface LoopbackRoute {
  cidr: string;
  release(): Promise<void>;
}

async function localRoutes(): Promise<string> {
  return (await run('ip', ['route', 'show', 'table', 'local'])).stdout;
}

/** Routes a free /24 of the benchmarking range to the loopback interface; `logDir` gets the watcher's log. */
export async function routeLocalCidr(logDir: string): Promise<LoopbackRoute> {
  let cidr = randomBenchmarkCidr();
  for (let i = 0; i < 20 && (await localRoutes()).includes(cidr); i++) cidr = randomBenchmarkCidr();
  try {
    await run('ip', ['route', 'add', 'local', cidr, 'dev', 'lo']);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new Error(
      `cannot route ${cidr} to the loopback interface (needs root / CAP_NET_ADMIN and iproute2): ${stderr.trim()}`,
    );
  }
  const guard: Proc = startGuard(
    'loopback route',
    `ip route del local ${cidr} dev lo`,
    join(logDir, 'loopback-route.log'),
  );
  return {
    cidr,
    async release() {
      await stopProcess(guard, 5_000);
      await run('ip', ['route', 'del', 'local', cidr, 'dev', 'lo']).catch(() => undefined);
    },
  };
}
