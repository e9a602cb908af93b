// The probe every restore drill runs (velero, snapshot, volsync Verify): its image from the template's
// allowlist and a command. Pure.
import { allowedImages } from './job.ts';
import { str, stringArray } from './object.ts';
import type { MaterializeInput } from './types.ts';

/** The probe's image and command from a drill's parameters, or why they cannot run. */
export function probeParameters({
  parameters,
  template,
}: Pick<MaterializeInput, 'parameters' | 'template'>):
  | { ok: true; image: string; command: string[] }
  | { ok: false; reason: string; message: string } {
  const image = str(parameters.image);
  const allowed = allowedImages(template.inputSchema);
  if (!image || !allowed.includes(image)) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `parameters.image ${JSON.stringify(image ?? null)} is not allowed by template ${template.name}; use one of: ${allowed.join(', ') || '(none: the template has no image allowlist)'}`,
    };
  }
  const command = stringArray(parameters.command);
  if (command.length === 0) {
    return { ok: false, reason: 'InvalidParameters', message: 'parameters.command is required: the probe' };
  }
  return { ok: true, image, command };
}
