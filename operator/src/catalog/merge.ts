// The effective template set: the built-ins, then each catalog's entries in order. Same name replaces,
// `disabled: true` removes, a new name extends.
import type { Catalog } from './catalog-schema.ts';
import type { EffectiveTemplate, Template } from './template.ts';

export const BUILTIN_SOURCE = 'builtin';

export function mergeTemplates(
  builtins: readonly Template[],
  catalogs: Catalog | readonly Catalog[],
): EffectiveTemplate[] {
  const byName = new Map<string, EffectiveTemplate>();
  for (const t of builtins) byName.set(t.name, { ...t, source: BUILTIN_SOURCE });
  for (const catalog of Array.isArray(catalogs) ? catalogs : [catalogs as Catalog]) {
    for (const entry of catalog.templates) {
      if ('disabled' in entry && entry.disabled === true) byName.delete(entry.name);
      else byName.set(entry.name, entry as EffectiveTemplate);
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
