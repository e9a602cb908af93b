// The part of a Dockerfile a daemonless build must reproduce, read the way BuildKit reads it: the
// stages, and what a stage's instructions make of its base image's config (ARG, ENV, LABEL, WORKDIR,
// USER, EXPOSE, ENTRYPOINT, CMD) and which files its COPYs bring in from where. Pure: text in, data out.
// hack/images/same-image.test.ts compares the operator image with the `Dockerfile` through it.
// Instructions it does not model (ADD, VOLUME, SHELL, ...) are refused in the stages read, so a
// Dockerfile change the comparison cannot follow fails loudly instead of being ignored.
import { posix } from 'node:path';

export interface Instruction {
  /** Upper case: FROM, RUN, COPY ... */
  keyword: string;
  /** The rest of the instruction, continuation lines joined. */
  args: string;
  line: number;
}

export interface Stage {
  /** The FROM image reference. */
  base: string;
  name?: string;
  instructions: Instruction[];
}

/** The stages of a Dockerfile: comments and parser directives dropped, continuation lines joined. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      i++;
      // A comment line inside a continuation is dropped, as BuildKit does.
      if (/^\s*#/.test(lines[i]!)) continue;
      line = `${line.replace(/\\\s*$/, '')}\n${lines[i]}`;
    }
    const m = /^\s*(\S+)\s*([\s\S]*)$/.exec(line)!;
    const ins = { keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 };
    if (ins.keyword === 'FROM') {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!from) throw new Error(`Dockerfile line ${ins.line}: cannot read FROM ${ins.args}`);
      stages.push({ base: from[1]!, ...(from[2] ? { name: from[2] } : {}), instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile line ${ins.line}: ${ins.keyword} before FROM`);
    stage.instructions.push(ins);
  }
  return stages;
}

/** The config fields of an image that Dockerfile instructions set (the OCI config's `config`). */
export interface ContainerConfig {
  User?: string;
  WorkingDir?: string;
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  ExposedPorts?: Record<string, object>;
  Labels?: Record<string, string>;
}

export interface Copy {
  /** `--from` stage name, absent for the build context. */
  from?: string;
  sources: string[];
  /** Absolute, resolved against the WORKDIR at that point. */
  dest: string;
  /** The destination was written as a directory (`./`, `dir/`): sources go in under their names. */
  intoDir: boolean;
  line: number;
}

export interface StageResult {
  config: ContainerConfig;
  copies: Copy[];
  runs: Instruction[];
}

/** Words of an instruction's arguments: quotes removed, a backslash escaping the next character. */
export function shellWords(s: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < s.length) word = (word ?? '') + s[++i];
      else word = (word ?? '') + c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word = word ?? '';
    } else if (c === '\\' && i + 1 < s.length) word = (word ?? '') + s[++i];
    else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + c;
  }
  if (quote) throw new Error(`unterminated ${quote} in ${s}`);
  if (word !== undefined) words.push(word);
  return words;
}

function substitute(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string | undefined, b: string | undefined) => {
    return vars[(a ?? b)!] ?? '';
  });
}

/** key=value pairs (LABEL, ENV), or ENV's legacy `key value`. */
function pairs(ins: Instruction, vars: Record<string, string>): [string, string][] {
  const words = shellWords(ins.args);
  if (ins.keyword === 'ENV' && words.length > 0 && !words[0]!.includes('='))
    return [
      [words[0]!, substitute(ins.args.slice(ins.args.indexOf(words[0]!) + words[0]!.length).trim(), vars)],
    ];
  return words.map((w) => {
    const eq = w.indexOf('=');
    if (eq <= 0) throw new Error(`Dockerfile line ${ins.line}: ${ins.keyword} expects key=value, got ${w}`);
    return [w.slice(0, eq), substitute(w.slice(eq + 1), vars)];
  });
}

/** ENTRYPOINT/CMD: the exec (JSON) form as it is, the shell form under /bin/sh -c. */
function command(ins: Instruction): string[] {
  if (ins.args.startsWith('[')) {
    const parsed: unknown = JSON.parse(ins.args);
    if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string'))
      throw new Error(`Dockerfile line ${ins.line}: ${ins.keyword} must be a JSON array of strings`);
    return parsed;
  }
  return ['/bin/sh', '-c', ins.args];
}

/**
 * What a stage makes of its base's config, with `buildArgs` for its ARGs (else their defaults). ENV
 * replaces a variable of the base in place; ENTRYPOINT clears the base's CMD, as Docker does.
 */
export function applyStage(
  stage: Stage,
  base: ContainerConfig,
  buildArgs: Record<string, string> = {},
): StageResult {
  const config: ContainerConfig = structuredClone(base);
  const vars: Record<string, string> = {};
  const copies: Copy[] = [];
  const runs: Instruction[] = [];
  const envVars = () => Object.fromEntries((config.Env ?? []).map((kv) => kv.split(/=(.*)/s).slice(0, 2)));
  for (const ins of stage.instructions) {
    const scope = { ...envVars(), ...vars };
    switch (ins.keyword) {
      case 'ARG': {
        const [name, def] = ins.args.split(/=(.*)/s);
        vars[name!] = buildArgs[name!] ?? (def === undefined ? '' : (shellWords(def)[0] ?? ''));
        break;
      }
      case 'ENV':
        for (const [k, v] of pairs(ins, scope)) {
          const env = (config.Env ?? []).filter((kv) => !kv.startsWith(`${k}=`));
          const at = (config.Env ?? []).findIndex((kv) => kv.startsWith(`${k}=`));
          env.splice(at < 0 ? env.length : at, 0, `${k}=${v}`);
          config.Env = env;
        }
        break;
      case 'LABEL':
        config.Labels = { ...config.Labels, ...Object.fromEntries(pairs(ins, scope)) };
        break;
      case 'WORKDIR':
        config.WorkingDir = posix.resolve(config.WorkingDir || '/', substitute(ins.args, scope));
        break;
      case 'USER':
        config.User = substitute(ins.args, scope);
        break;
      case 'EXPOSE':
        config.ExposedPorts = {
          ...config.ExposedPorts,
          ...Object.fromEntries(
            shellWords(substitute(ins.args, scope)).map((p) => [p.includes('/') ? p : `${p}/tcp`, {}]),
          ),
        };
        break;
      case 'ENTRYPOINT':
        config.Entrypoint = command(ins);
        delete config.Cmd;
        break;
      case 'CMD':
        config.Cmd = command(ins);
        break;
      case 'COPY': {
        const words = shellWords(substitute(ins.args, scope));
        const flags = words.filter((w) => w.startsWith('--'));
        const paths = words.filter((w) => !w.startsWith('--'));
        const unknown = flags.filter((f) => !/^--(from|chmod|chown|link)=/.test(f));
        if (unknown.length > 0 || paths.length < 2)
          throw new Error(`Dockerfile line ${ins.line}: cannot follow COPY ${ins.args}`);
        const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
        const raw = paths.at(-1)!;
        const dest = posix.resolve(config.WorkingDir || '/', raw);
        const intoDir = raw === '.' || raw.endsWith('/');
        copies.push({
          ...(from ? { from } : {}),
          sources: paths.slice(0, -1),
          dest,
          intoDir,
          line: ins.line,
        });
        break;
      }
      case 'RUN':
        runs.push({ ...ins, args: substitute(ins.args, scope) });
        break;
      default:
        throw new Error(
          `Dockerfile line ${ins.line}: ${ins.keyword} is not modelled by hack/images/dockerfile.ts; teach it before relying on the comparison`,
        );
    }
  }
  return { config, copies, runs };
}

/**
 * .dockerignore as BuildKit applies it: patterns in order, the last one matching a path (or one of
 * its parent directories) decides, `!` re-includes. `*` and `?` stay within one path segment, `**`
 * spans any number of them.
 */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = posix.normalize((negate ? l.slice(1) : l).trim()).replace(/^\/+|\/+$/g, '');
      const re = pattern
        .split('/')
        .map((seg) =>
          seg === '**'
            ? '.*'
            : seg
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\.\*\//g, '(?:.*/)?');
      return { negate, re: new RegExp(`^${re}$`) };
    });
  return (path) => {
    const parts = path.split('/');
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const r of rules) if (candidates.some((c) => r.re.test(c))) excluded = !r.negate;
    return excluded;
  };
}
