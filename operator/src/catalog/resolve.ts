// Which template an Operation runs: spec.template when set, else the one template for type + engine.
import type { Engine, OperationType } from '../api/enums.ts';
import type { Template } from './template.ts';
import { BUILTIN_TEMPLATES } from './templates/index.ts';

export interface TemplateRequest {
  template?: string;
  type: OperationType;
  engine: Engine;
}

export type Resolution<T extends Template> =
  | { ok: true; template: T }
  | { ok: false; reason: 'TemplateNotFound'; message: string };

/** The built-in template name for each type/engine pair: the tie-breaker when the catalog adds more. */
const BUILTIN_NAME = new Map(BUILTIN_TEMPLATES.map((t) => [`${t.type}/${t.engine}`, t.name]));

function list(ts: readonly Template[]): string {
  return ts.length === 0 ? '(none)' : ts.map((t) => `${t.name} (${t.type}/${t.engine})`).join(', ');
}

export function resolveTemplate<T extends Template>(
  catalog: { templates: readonly T[] } | readonly T[],
  req: TemplateRequest,
): Resolution<T> {
  const templates: readonly T[] = Array.isArray(catalog)
    ? catalog
    : (catalog as { templates: readonly T[] }).templates;
  const pair = `${req.type}/${req.engine}`;
  const candidates = templates.filter((t) => t.type === req.type && t.engine === req.engine);
  const notFound = (message: string): Resolution<T> => ({ ok: false, reason: 'TemplateNotFound', message });

  if (req.template !== undefined) {
    const named = templates.find((t) => t.name === req.template);
    if (!named) {
      return notFound(
        `template ${req.template} does not exist or is disabled in the catalog; templates for ${pair}: ${list(candidates)}`,
      );
    }
    if (named.type !== req.type || named.engine !== req.engine) {
      return notFound(
        `template ${named.name} runs ${named.type}/${named.engine}, not ${pair}; use one of ${list(candidates)} or omit spec.template`,
      );
    }
    return { ok: true, template: named };
  }
  if (candidates.length === 1) return { ok: true, template: candidates[0]! };
  if (candidates.length === 0) {
    const sameType = templates.filter((t) => t.type === req.type);
    return notFound(`no template runs ${pair}; templates for ${req.type}: ${list(sameType)}`);
  }
  const builtinName = BUILTIN_NAME.get(pair);
  const preferred = candidates.find((t) => t.name === builtinName);
  if (preferred) return { ok: true, template: preferred };
  return notFound(`several templates run ${pair}: ${list(candidates)}; set spec.template to choose one`);
}
