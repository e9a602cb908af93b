// Parsing a manifest someone else wrote (a migration ConfigMap's job.yaml, a hook in a Helm release record).
// The yaml library recurses once per nesting level: a Job nested 100,000 levels deep (200 KB of brackets)
// blocks the event loop for seconds and then overflows the stack, and a few thousand levels are enough to
// overflow it. So size and depth are bounded BEFORE parsing, by a linear scan of the text, and the parsed
// value is checked again without recursion (aliases can nest what the text does not show). Every refusal
// is a sentence for a condition message, never a thrown error. Pure.
import YAML from 'yaml';
import { checkParametersLimits } from '../catalog/parameters-limits.ts';

const KIB = 1024;
/** A Job manifest is a few KiB; a ConfigMap may hold 1 MiB. */
export const MAX_MANIFEST_BYTES = 256 * KIB;
/** Objects and lists inside each other; a Job's pod template is about a dozen levels deep. */
export const MAX_MANIFEST_DEPTH = 64;

export type ParsedManifest = { ok: true; value: unknown } | { ok: false; problem: string };

/** Levels a block collection may add per open indentation: a sequence may sit at its mapping key's column. */
const LEVELS_PER_INDENT = 2;
const BLOCK_SCALAR = /(?:^|[\s:-])[|>][0-9+-]*\s*$/;

/**
 * An upper bound of the nesting of the collections `text` describes (aliases aside): every indentation
 * still open counts twice, each compact `- `/`? ` indicator and mapping key on a line once, every open
 * flow bracket once (and once more for a key inside it). Quoted scalars, also across lines, and block
 * scalars (`|`, `>`) are text. Where the scan cannot tell (a bracket inside a plain scalar), it counts:
 * any doubt makes the bound larger, never smaller. Linear in the text's length.
 */
export function nestingBound(text: string): number {
  let max = 0;
  let flow = 0;
  let quote = '';
  const indents: number[] = [];
  // A block scalar: the indentation of its parent node, and of its text once its first line showed it.
  let scalar: { parent: number; text?: number } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const content = line.trimStart();
    const indent = line.length - content.length;
    if (scalar) {
      if (content === '') continue;
      scalar.text ??= indent > scalar.parent ? indent : undefined;
      if (scalar.text !== undefined && indent >= scalar.text) continue;
      scalar = undefined;
    }
    let i = 0;
    let levels = 0;
    // The column of the line's last `- ` / `? ` indicator, and where its node starts after them.
    let indicatorColumn = indent;
    let nodeColumn = indent;
    if (!quote) {
      if (content === '' || content.startsWith('#')) continue;
      if (/^(---|\.\.\.)(\s|$)/.test(content)) {
        indents.length = 0;
        continue;
      }
      while (indents.length > 0 && (indents.at(-1) ?? 0) >= indent) indents.pop();
      indents.push(indent);
      while (
        (content[i] === '-' || content[i] === '?') &&
        (i + 1 === content.length || content[i + 1] === ' ')
      ) {
        levels++;
        indicatorColumn = indent + i;
        i += 2;
        while (content[i] === ' ') i++;
      }
      nodeColumn = indent + i;
    }
    const base = LEVELS_PER_INDENT * indents.length + levels;
    max = Math.max(max, base + flow);
    let key = 0;
    // At the start of a node (where `[` / `{` open a collection) rather than inside a plain scalar.
    let atNode = !quote;
    let code = '';
    for (; i < content.length; i++) {
      const c = content[i] ?? '';
      if (quote) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = '';
        continue;
      }
      if ((c === '"' || c === "'") && atNode) {
        quote = c;
        atNode = false;
        continue;
      }
      if (c === '#' && (i === 0 || content[i - 1] === ' ' || content[i - 1] === '\t')) break;
      code += c;
      if (c === ' ' || c === '\t') continue;
      if ((c === '&' || c === '!') && atNode) {
        // An anchor or tag before the node: still at its start.
        while (i + 1 < content.length && content[i + 1] !== ' ') i++;
      } else if ((c === '[' || c === '{') && (atNode || flow > 0)) {
        flow++;
        max = Math.max(max, base + key + flow);
      } else if ((c === ']' || c === '}') && flow > 0) {
        flow--;
        atNode = false;
      } else if (c === ',' && flow > 0) {
        atNode = true;
      } else if (c === ':' && (flow > 0 || i + 1 === content.length || content[i + 1] === ' ')) {
        // A key: a mapping level here (in a flow sequence, `[a: b]` is a mapping inside it).
        key = Math.max(key, 1);
        max = Math.max(max, base + key + flow);
        atNode = true;
      } else {
        atNode = false;
      }
    }
    // A block scalar's text is indented past its parent: the key it is the value of, else the last
    // sequence indicator before it (taking a parent too far right only ends the text early: counts more).
    if (!quote && BLOCK_SCALAR.test(code)) scalar = { parent: key > 0 ? nodeColumn : indicatorColumn };
  }
  return max;
}

/** The first line of a parser error (the library's own message names line and column). */
function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}

/**
 * One YAML document of at most MAX_MANIFEST_BYTES and MAX_MANIFEST_DEPTH levels, or why not, as the
 * predicate of a sentence about the text ("is not valid YAML (...)").
 */
export function parseUntrustedYaml(
  text: string,
  limits: { bytes: number; depth: number } = { bytes: MAX_MANIFEST_BYTES, depth: MAX_MANIFEST_DEPTH },
): ParsedManifest {
  const bytes = Buffer.byteLength(text);
  if (bytes > limits.bytes) {
    return {
      ok: false,
      problem: `is ${Math.ceil(bytes / KIB)} KiB, more than the ${limits.bytes / KIB} KiB a Job manifest may be`,
    };
  }
  const deep = `is nested more than ${limits.depth} levels deep (objects and lists inside each other), far more than a Job manifest needs`;
  if (nestingBound(text) > limits.depth) return { ok: false, problem: deep };
  let value: unknown;
  try {
    value = YAML.parse(text);
  } catch (err) {
    return { ok: false, problem: `is not valid YAML (${firstLine(err)})` };
  }
  const checked = checkParametersLimits(value, { depth: limits.depth, bytes: Number.POSITIVE_INFINITY });
  return checked.ok ? { ok: true, value } : { ok: false, problem: deep };
}
