// Untrusted text (an engine's message, a release record's chart name) on its way to a terminal or a
// status: control characters removed, so it cannot move the cursor, recolour, retitle or clear a
// terminal (ESC/CSI/OSC sequences) or reorder what is shown (bidirectional overrides). Pure.

// C0 controls except newline and tab, DEL, C1 controls (their 8-bit CSI among them), and the Unicode
// bidirectional embeddings, overrides and isolates.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `s` without control characters; newlines and tabs stay. */
export function printable(s: string): string {
  return s.replace(CONTROLS, '');
}

/** `s` as one printable line: also newlines and tabs become spaces, so it cannot forge lines of output. */
export function printableLine(s: string): string {
  return printable(s).replace(/[\r\n\t]+/g, ' ');
}

/** At most `max` characters of printable `s`, saying when it was cut. */
export function bounded(s: string, max: number): string {
  const clean = printable(s);
  return clean.length <= max ? clean : `${clean.slice(0, max)}… (${clean.length - max} more characters cut)`;
}
