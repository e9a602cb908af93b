// A failed test's work directory (logs, manifests) is worth keeping, but not in $TMPDIR: make test fails
// when a run leaves new $TMPDIR/vws-* entries (hack/lib/temp-leaks.sh). It goes to the clone's
// git-ignored bin/test-results/kept/, which the next make test clears.
import { mkdir, rename } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ROOT } from '../../hack/lib/controlplane.ts';

/** Moves `dir` into bin/test-results/kept/ and returns where it is now (where it was, on another file system). */
export async function keepInTestResults(dir: string): Promise<string> {
  const keptDir = join(ROOT, 'bin/test-results/kept');
  try {
    await mkdir(keptDir, { recursive: true });
    await rename(dir, join(keptDir, basename(dir)));
    return join(keptDir, basename(dir));
  } catch {
    return dir;
  }
}
