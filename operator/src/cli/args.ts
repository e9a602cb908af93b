// `kubectl vws` command lines, parsed into commands (pure). kubectl hands a plugin every argument after
// its name, global flags included, so -n/--namespace, --context and --kubeconfig are ours to read.

import type { ObjectKind, ObjectRef } from './object-ref.ts';
import type { RestoreRun, TemplateRun } from './requests.ts';

export interface Globals {
  namespace?: string;
  allNamespaces: boolean;
  context?: string;
  kubeconfig?: string;
}

export type Command =
  | { cmd: 'help'; text: string }
  | { cmd: 'run-cron'; name: string; request?: string; wait: boolean; follow: boolean }
  | ({ cmd: 'run-template'; follow: boolean } & TemplateRun)
  | ({ cmd: 'restore'; follow: boolean } & RestoreRun)
  | { cmd: 'approve'; name: string }
  | { cmd: 'cancel'; name: string }
  | { cmd: 'status'; ref: ObjectRef; watch: boolean }
  | { cmd: 'history'; ref?: ObjectRef; type?: string; limit: number }
  | { cmd: 'backfill'; name: string; from: Date; to: Date }
  | { cmd: 'resume' | 'abandon'; kind: 'cronoperation' | 'watchoperation'; name: string };

export type Parsed = { ok: true; globals: Globals; command: Command } | { ok: false; message: string };

export const USAGE = `kubectl vws — run, approve, cancel and follow vworkspace Operations

Usage:
  kubectl vws run cronoperation/<name> [--request <value>] [--no-wait] [-w]
        run a CronOperation's template now (annotation ops.vworkspace.io/run-now); prints the Operation(s)
  kubectl vws run template/<template> --target <instance> [--type <T> --engine <E>] [-p key=value]... [--name <name>] [-w]
        create an Operation from a template (built-in templates need no --type/--engine)
  kubectl vws restore <instance> [--from <namespace>] [--backup <name>] [--name <name>] [-w]
        restore the instance from its newest velero Backup (or --backup) made in --from (default: this
        namespace), also when the instance is gone; another namespace is a clone into this one
  kubectl vws backfill cronoperation/<name> --from <RFC 3339> --to <RFC 3339>
        create, as you, the Operations of the CronOperation's slots in [from, to] (at most 50), named as
        the scheduled runs are: a slot that already ran is reported and not run again
  kubectl vws resume cronoperation/<name>
        resume the halted fleet run (spec.rollout) once its cause is fixed: the remaining waves start,
        failures before now no longer count (annotation ops.vworkspace.io/resume)
  kubectl vws abandon cronoperation/<name>
        end the unfinished fleet run: nothing more of it starts (annotation ops.vworkspace.io/abandon)
  kubectl vws approve <operation>         approve an Operation waiting for approval
  kubectl vws cancel <operation>          cancel an Operation (its engine child is stopped)
  kubectl vws status <operation> | cronoperation/<name> | watchoperation/<name> | applicationinstance/<name> [-w]
        show the status; -w follows an Operation live until it ends (exit 0 if it Succeeded)
  kubectl vws history [cronoperation/<name> | watchoperation/<name> | applicationinstance/<name>] [--type <T>] [--limit N] [-A]
        the Operations (of that object, or of the namespace), newest first

Flags:
  -n, --namespace <ns>   namespace (default: the kubeconfig context's, else default)
  -A, --all-namespaces   history: every namespace
      --context <name>   kubeconfig context
      --kubeconfig <path>
  -h, --help
`;

const KINDS: Record<string, ObjectKind> = {
  operation: 'operation',
  operations: 'operation',
  op: 'operation',
  ops: 'operation',
  cronoperation: 'cronoperation',
  cronoperations: 'cronoperation',
  cronop: 'cronoperation',
  watchoperation: 'watchoperation',
  watchoperations: 'watchoperation',
  watchop: 'watchoperation',
  applicationinstance: 'applicationinstance',
  applicationinstances: 'applicationinstance',
  ai: 'applicationinstance',
  template: 'template',
};

/** `kind/name` (kubectl's short names allowed), or a bare name meaning `fallback`. */
export function parseRef(text: string, fallback: ObjectKind): ObjectRef | string {
  const slash = text.indexOf('/');
  if (slash < 0) return text ? { kind: fallback, name: text } : 'a name is required';
  const kind =
    KINDS[
      text
        .slice(0, slash)
        .toLowerCase()
        .replace(/\.ops\.vworkspace\.io$|\.apps\.vworkspace\.io$/, '')
    ];
  const name = text.slice(slash + 1);
  if (!kind)
    return `unknown kind "${text.slice(0, slash)}": use operation, cronoperation, watchoperation, applicationinstance or template`;
  if (!name) return `"${text}" names no object`;
  return { kind, name };
}

/** `-p key=value`: the value as JSON when it parses (numbers, true, objects), else the string. */
export function parseParam(text: string, into: Record<string, unknown>): string | undefined {
  const eq = text.indexOf('=');
  if (eq <= 0) return `--param "${text}": use key=value (key may be a.b for a nested parameter)`;
  let value: unknown = text.slice(eq + 1);
  try {
    value = JSON.parse(value as string);
  } catch {
    // a plain string
  }
  const parts = text.slice(0, eq).split('.');
  let cur = into;
  for (const p of parts.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null || Array.isArray(cur[p])) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts.at(-1)!] = value;
  return undefined;
}

const VALUE_FLAGS = new Set([
  '-n',
  '--namespace',
  '--context',
  '--kubeconfig',
  '--request',
  '--target',
  '--type',
  '--engine',
  '--name',
  '-p',
  '--param',
  '--limit',
  '--from',
  '--backup',
  '--to',
]);

/** Splits flags (`--x v`, `--x=v`) from positionals. */
function split(argv: readonly string[]): { flags: [string, string | true][]; positional: string[] } | string {
  const flags: [string, string | true][] = [];
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-') || a === '-') {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const flag = eq > 0 ? a.slice(0, eq) : a;
    if (VALUE_FLAGS.has(flag)) {
      const v = eq > 0 ? a.slice(eq + 1) : argv[++i];
      if (v === undefined) return `${flag} needs a value`;
      flags.push([flag, v]);
    } else flags.push([flag, true]);
  }
  return { flags, positional };
}

export function parseArgs(argv: readonly string[]): Parsed {
  const s = split(argv);
  if (typeof s === 'string') return { ok: false, message: s };
  const globals: Globals = { allNamespaces: false };
  const opts: Record<string, string | true> = {};
  const parameters: Record<string, unknown> = {};
  for (const [flag, v] of s.flags) {
    switch (flag) {
      case '-n':
      case '--namespace':
        globals.namespace = String(v);
        break;
      case '--context':
        globals.context = String(v);
        break;
      case '--kubeconfig':
        globals.kubeconfig = String(v);
        break;
      case '-A':
      case '--all-namespaces':
        globals.allNamespaces = true;
        break;
      case '-p':
      case '--param': {
        const problem = parseParam(String(v), parameters);
        if (problem) return { ok: false, message: problem };
        break;
      }
      case '-h':
      case '--help':
        return { ok: true, globals, command: { cmd: 'help', text: USAGE } };
      case '-w':
      case '--watch':
        opts.watch = true;
        break;
      case '--no-wait':
      case '--request':
      case '--target':
      case '--type':
      case '--engine':
      case '--name':
      case '--limit':
      case '--from':
      case '--backup':
      case '--to':
        opts[flag.slice(2)] = v;
        break;
      default:
        return { ok: false, message: `unknown flag ${flag}\n\n${USAGE}` };
    }
  }
  const [verb, first, ...more] = s.positional;
  // `backfill cronoperation <name>` as kubectl writes it, besides `backfill cronoperation/<name>`.
  const spaced =
    (verb === 'backfill' || verb === 'resume' || verb === 'abandon') &&
    first !== undefined &&
    !first.includes('/') &&
    more.length > 0;
  const object = spaced ? `${first}/${more[0]}` : first;
  const rest = spaced ? more.slice(1) : more;
  if (!verb) return { ok: true, globals, command: { cmd: 'help', text: USAGE } };
  if (rest.length > 0) return { ok: false, message: `unexpected argument "${rest[0]}"` };
  const str = (k: string) => (typeof opts[k] === 'string' ? (opts[k] as string) : undefined);
  const need = (what: string) => ({
    ok: false as const,
    message: `kubectl vws ${verb}: ${what}\n\n${USAGE}`,
  });
  const watch = opts.watch === true;
  switch (verb) {
    case 'backfill': {
      if (!object) return need('name cronoperation/<name>');
      const ref = parseRef(object, 'cronoperation');
      if (typeof ref === 'string') return need(ref);
      if (ref.kind !== 'cronoperation')
        return need(`cannot backfill a ${ref.kind}: name cronoperation/<name>`);
      const from = parseInstant(str('from'), '--from');
      const to = parseInstant(str('to'), '--to');
      if (typeof from === 'string') return need(from);
      if (typeof to === 'string') return need(to);
      return { ok: true, globals, command: { cmd: 'backfill', name: ref.name, from, to } };
    }
    case 'run': {
      if (!object) return need('name cronoperation/<name> or template/<name>');
      const ref = parseRef(object, 'cronoperation');
      if (typeof ref === 'string') return need(ref);
      if (ref.kind === 'cronoperation') {
        const request = str('request');
        return {
          ok: true,
          globals,
          command: {
            cmd: 'run-cron',
            name: ref.name,
            ...(request !== undefined ? { request } : {}),
            wait: opts['no-wait'] !== true,
            follow: watch,
          },
        };
      }
      if (ref.kind !== 'template')
        return need(`cannot run a ${ref.kind}: name cronoperation/<name> or template/<name>`);
      const target = str('target');
      if (!target) return need('--target <ApplicationInstance> is required with template/<name>');
      const type = str('type');
      const engine = str('engine');
      const name = str('name');
      return {
        ok: true,
        globals,
        command: {
          cmd: 'run-template',
          template: ref.name,
          target,
          ...(type ? { type } : {}),
          ...(engine ? { engine } : {}),
          ...(name ? { name } : {}),
          parameters,
          follow: watch,
        },
      };
    }
    case 'restore': {
      if (!object) return need('name the ApplicationInstance to restore');
      const ref = parseRef(object, 'applicationinstance');
      if (typeof ref === 'string') return need(ref);
      if (ref.kind !== 'applicationinstance')
        return need('name an applicationinstance/<name> (or just <name>)');
      const from = str('from');
      const backup = str('backup');
      const name = str('name');
      return {
        ok: true,
        globals,
        command: {
          cmd: 'restore',
          instance: ref.name,
          ...(from ? { from } : {}),
          ...(backup ? { backup } : {}),
          ...(name ? { name } : {}),
          follow: watch,
        },
      };
    }
    case 'resume':
    case 'abandon': {
      if (!object) return need('name cronoperation/<name> or watchoperation/<name>');
      const ref = parseRef(object, 'cronoperation');
      if (typeof ref === 'string') return need(ref);
      if (ref.kind !== 'cronoperation' && ref.kind !== 'watchoperation')
        return need(
          `cannot ${verb} a ${ref.kind}: only a CronOperation's or WatchOperation's run rolls out in waves (spec.rollout); name cronoperation/<name> or watchoperation/<name>`,
        );
      return { ok: true, globals, command: { cmd: verb, kind: ref.kind, name: ref.name } };
    }
    case 'approve':
    case 'cancel': {
      if (!object) return need('name the Operation');
      const ref = parseRef(object, 'operation');
      if (typeof ref === 'string') return need(ref);
      if (ref.kind !== 'operation')
        return need(`only Operations can be ${verb === 'approve' ? 'approved' : 'cancelled'}`);
      return { ok: true, globals, command: { cmd: verb, name: ref.name } };
    }
    case 'status': {
      if (!object) return need('name what to show');
      const ref = parseRef(object, 'operation');
      if (typeof ref === 'string') return need(ref);
      if (ref.kind === 'template') return need('templates have no status');
      return { ok: true, globals, command: { cmd: 'status', ref, watch } };
    }
    case 'history': {
      let ref: ObjectRef | undefined;
      if (object) {
        const r = parseRef(object, 'cronoperation');
        if (typeof r === 'string') return need(r);
        if (r.kind === 'operation' || r.kind === 'template')
          return need('name a cronoperation/, watchoperation/ or applicationinstance/');
        ref = r;
      }
      const limit = Number(str('limit') ?? 20);
      if (!Number.isInteger(limit) || limit < 1) return need('--limit must be a positive integer');
      const type = str('type');
      return {
        ok: true,
        globals,
        command: { cmd: 'history', ...(ref ? { ref } : {}), ...(type ? { type } : {}), limit },
      };
    }
    default:
      return { ok: false, message: `unknown command "${verb}"\n\n${USAGE}` };
  }
}

/** An RFC 3339 instant with its offset (2025-03-01T00:00:00Z), or what is wrong with it. */
function parseInstant(text: string | undefined, flag: string): Date | string {
  if (text === undefined) return `${flag} <RFC 3339 time> is required, e.g. ${flag} 2025-03-01T00:00:00Z`;
  const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(text)
    ? Date.parse(text)
    : Number.NaN;
  return Number.isNaN(ms)
    ? `${flag} "${text}" is not an RFC 3339 time with a zone, e.g. 2025-03-01T00:00:00Z or 2025-03-01T02:00:00+02:00`
    : new Date(ms);
}
