// Runs a pushed image the closest way this machine allows without a container runtime: its flattened
// filesystem (`crane export`) extracted to a directory, then its entrypoint started inside that
// directory as root (`unshare --root`), as the image's numeric user (`--map-user`, an unprivileged user
// namespace), in its working directory, with its Env. Nothing of the host's filesystem is visible to
// the process, so it proves the image carries everything it needs (the dynamic loader, the shared
// libraries, node_modules, /etc/passwd). Network, PID and mount namespaces are the host's.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type ConfigFile, configOf, exportImage } from '../../hack/images/crane.ts';

export interface ExtractedImage {
  rootfs: string;
  config: NonNullable<ConfigFile['config']>;
}

export function extractImage(ref: string, dir: string): ExtractedImage {
  const rootfs = join(dir, 'rootfs');
  mkdirSync(rootfs, { recursive: true });
  const tar = join(dir, 'fs.tar');
  exportImage(ref, tar);
  const r = spawnSync('tar', ['-xf', tar, '-C', rootfs], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar -xf ${tar}: ${r.stderr}`);
  return { rootfs, config: configOf(ref).config ?? {} };
}

export interface Launch {
  command: string;
  args: string[];
  /** The image's Env as an object (the caller adds its own over it). */
  env: Record<string, string>;
}

/** `unshare` arguments that start `argv` (default: the image's Entrypoint + Cmd) inside the image. */
export function inImage(img: ExtractedImage, argv?: string[]): Launch {
  const user = img.config.User ?? '0:0';
  const [uid = '', gid = uid] = user.split(':');
  if (!/^\d+$/.test(uid) || !/^\d+$/.test(gid)) throw new Error(`image user ${user} is not numeric`);
  const cmd = argv ?? [...(img.config.Entrypoint ?? []), ...(img.config.Cmd ?? [])];
  if (cmd.length === 0) throw new Error('the image has no Entrypoint or Cmd');
  const env = Object.fromEntries(
    (img.config.Env ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  return {
    command: existsSync('/usr/bin/unshare') ? '/usr/bin/unshare' : 'unshare',
    args: [
      `--map-user=${uid}`,
      `--map-group=${gid}`,
      `--root=${img.rootfs}`,
      `--wd=${img.config.WorkingDir || '/'}`,
      '--',
      ...cmd,
    ],
    env,
  };
}

/** Runs a command inside the image to completion. */
export function runInImage(
  img: ExtractedImage,
  argv: string[],
): { code: number; stdout: string; stderr: string } {
  const l = inImage(img, argv);
  const r = spawnSync(l.command, l.args, { encoding: 'utf8', env: l.env, timeout: 60_000 });
  return {
    code: r.status ?? -1,
    stdout: r.stdout ?? '',
    stderr: `${r.stderr ?? ''}${r.error ? String(r.error) : ''}`,
  };
}
