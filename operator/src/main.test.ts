// What the operator's entry point loads: the runtime's own REST client and kubeconfig reader, never
// @kubernetes/client-node (its weight is why the runtime has its own; docs/performance.md).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('the operator process', () => {
  it('never loads @kubernetes/client-node (about 55 MiB resident) for what main.ts imports', () => {
    // Records every module the operator's entry point resolves, in a fresh process.
    const script = `
      import { registerHooks } from 'node:module';
      const seen = [];
      registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r; } });
      await import(${JSON.stringify(new URL('./main.ts', import.meta.url).href)});
      process.stdout.write(JSON.stringify(seen));
    `;
    const seen = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
    ) as string[];
    expect(seen.filter((u) => u.endsWith('/main.ts'))).toHaveLength(1);
    expect(seen.some((u) => u.includes('/packages/runtime/src/kube-client.ts'))).toBe(true);
    expect(seen.filter((u) => u.includes('@kubernetes/client-node'))).toEqual([]);
  });
});
