// Summarises a V8 CPU profile (`node --cpu-prof`, `bench/run.ts --profile`): where the process spent
// its busy time, by function (self time) and by file (self time summed), so a report can say what a
// profile showed without a browser.
//
//   node bench/profile.ts <file.cpuprofile> [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: node bench/profile.ts <file.cpuprofile> [--top N]');
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map<number, number>();
p.samples.forEach((id, i) => {
  self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
});
const where = (url: string) =>
  url.replace(/^file:\/\//, '').replace(/^.*?\/(operator|node_modules|bench|test|hack)\//, '$1/');
const keyOf = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url) || '(native)'}:${n.callFrame.lineNumber + 1}`;
// Inclusive: a sample counts once for every distinct function on its stack.
const inclusive = new Map<string, number>();
for (const [id, us] of self) {
  if (byId.get(id)?.callFrame.functionName === '(idle)') continue;
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = keyOf(byId.get(cur)!);
    if (seen.has(k)) continue;
    seen.add(k);
    inclusive.set(k, (inclusive.get(k) ?? 0) + us / 1e6);
  }
}
const total = (p.endTime - p.startTime) / 1e6;
let idle = 0;
const fns = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  const { functionName, url, lineNumber } = n.callFrame;
  const s = us / 1e6;
  if (functionName === '(idle)') {
    idle += s;
    continue;
  }
  const where = url
    .replace(/^file:\/\//, '')
    .replace(/^.*?\/(operator|node_modules|bench|test|hack)\//, '$1/');
  const fn = `${functionName || '(anonymous)'} ${where || '(native)'}:${lineNumber + 1}`;
  fns.set(fn, (fns.get(fn) ?? 0) + s);
  const f = where || `(${functionName})`;
  files.set(f, (files.get(f) ?? 0) + s);
}
const busy = total - idle;
const top = Number(values.top);
const show = (title: string, m: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(
      `${v.toFixed(2).padStart(9)} s ${((100 * v) / busy).toFixed(1).padStart(5)} %  ${k}\n`,
    );
};
process.stdout.write(
  `${file}: ${total.toFixed(1)} s profiled, ${busy.toFixed(1)} s busy, ${idle.toFixed(1)} s idle\n`,
);
show('self time by function', fns);
show('self time by file', files);
show('inclusive time by function (the function and what it called)', inclusive);
