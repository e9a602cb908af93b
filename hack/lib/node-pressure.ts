// What the real node says when its host runs short (docs/real-node.md, "Disk"): the kubelet's pressure
// conditions turned into one line that says what to do, and the pre-flight rule for the disk. Pure: the
// node (hack/lib/real-node.ts) reads the conditions and the filesystem and passes them in.

/** The kubelet's eviction threshold for nodefs and imagefs, in percent of the filesystem (kubelet.yaml). */
export const EVICTION_PERCENT = 1;

/** The most the node's directory holds during a run of every journey (docs/real-node.md, "Disk"). */
export const NODE_PEAK_BYTES = 5e9;

/** The conditions the kubelet sets True when it starts evicting pods. */
export const PRESSURE_CONDITIONS = ['DiskPressure', 'MemoryPressure', 'PIDPressure'] as const;

export interface NodeCondition {
  type: string;
  status: string;
  message?: string;
}

/** The filesystem that holds the node's directory, as statfs sees it (available to unprivileged users). */
export interface FreeSpace {
  path: string;
  freeBytes: number;
  totalBytes: number;
}

const gb = (bytes: number) => `${(bytes / 1e9).toFixed(1)} GB`;

/** The space below which the kubelet evicts: its percentage of the filesystem. */
export function evictionBytes(disk: FreeSpace): number {
  return Math.ceil((disk.totalBytes * EVICTION_PERCENT) / 100);
}

/**
 * The line to fail with while the kubelet reports pressure (every pod on the node is being evicted, so a
 * wait for one is in vain), or undefined when it reports none.
 */
export function pressureMessage(conditions: readonly NodeCondition[], disk: FreeSpace): string | undefined {
  const on = PRESSURE_CONDITIONS.filter((type) =>
    conditions.some((c) => c.type === type && c.status === 'True'),
  );
  if (on.length === 0) return undefined;
  const parts = on.map((type) => {
    if (type === 'DiskPressure')
      return `the kubelet reports DiskPressure: it evicts pods; ${disk.path} has ${gb(disk.freeBytes)} free of ${gb(disk.totalBytes)} (its threshold is ${EVICTION_PERCENT} %, ${gb(evictionBytes(disk))}): free disk space and rerun`;
    const said = conditions.find((c) => c.type === type)?.message;
    const what = type === 'MemoryPressure' ? 'memory' : 'process ids';
    return `the kubelet reports ${type}: it evicts pods${said ? ` (${said})` : ''}: free ${what} on this machine and rerun`;
  });
  return parts.join('; ');
}

/**
 * Refuses a node start on a disk that would fill during the run: the node's peak plus the kubelet's
 * threshold must be free. Returns the reason, or undefined when the node fits.
 */
export function preflightProblem(disk: FreeSpace, peakBytes = NODE_PEAK_BYTES): string | undefined {
  const need = peakBytes + evictionBytes(disk);
  if (disk.freeBytes >= need) return undefined;
  return `the real node needs ${gb(need)} free on the filesystem of ${disk.path} (${gb(peakBytes)} for its directory at its peak, plus the kubelet's eviction threshold of ${EVICTION_PERCENT} % of ${gb(disk.totalBytes)}), and it has ${gb(disk.freeBytes)}: free disk space and rerun (docs/real-node.md, "Disk")`;
}
