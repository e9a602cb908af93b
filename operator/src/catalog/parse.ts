// catalog.yaml in ConfigMaps → one Catalog. Pure: the caller lists the ConfigMaps (labelled
// ops.vworkspace.io/catalog: "true" in the operator namespace), then turns each problem into a Warning
// Event on its ConfigMap and a metric. A bad entry is skipped and reported; the rest still loads.
import YAML from 'yaml';
import { CATALOG_CONFIGMAP_KEY } from '../api/annotations.ts';
import { ENGINE_TYPES, engineSupportsType } from '../api/enums.ts';
import {
  APPLICATION_ID_PATTERN,
  ApplicationEntrySchema,
  type Catalog,
  emptyCatalog,
} from './catalog-schema.ts';
import { checkTemplateFlow, objectSchemaProblem } from './flow.ts';
import { childPath, formatFieldErrors, type JsonSchema, validateWithSchema } from './schema-validation.ts';
import { DisabledTemplateSchema, type MaintenanceWindow, type Template, TemplateSchema } from './template.ts';

export interface ConfigMapLike {
  metadata?: { name?: string; namespace?: string };
  data?: Record<string, string>;
}

export interface CatalogProblem {
  /** `<namespace>/<name>` of the ConfigMap. */
  configMap: string;
  /** Path of the bad entry inside catalog.yaml, e.g. `templates[2].inputSchema` or `applications.nextcloud`; '' for the whole file. */
  path: string;
  message: string;
}

export interface ParseOptions {
  /**
   * Deeper check of a maintenance window (cron fields, known time zone); returns an error message or
   * undefined. The schema already checks the shape; the schedule code knows the semantics.
   */
  validateWindow?: (w: MaintenanceWindow) => string | undefined;
}

export interface ParseResult {
  catalog: Catalog;
  problems: CatalogProblem[];
}

const TOP_LEVEL_KEYS = ['applications', 'templates'];
const applicationId = new RegExp(APPLICATION_ID_PATTERN);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function configMapId(cm: ConfigMapLike): string {
  return `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
}

export function parseCatalog(configMaps: readonly ConfigMapLike[], options: ParseOptions = {}): ParseResult {
  const catalog = emptyCatalog();
  const problems: CatalogProblem[] = [];
  // Name order, so which ConfigMap wins a duplicate never depends on list order.
  const sorted = [...configMaps].sort((a, b) => configMapId(a).localeCompare(configMapId(b)));
  const templateSource = new Map<string, string>();
  for (const cm of sorted) {
    const id = configMapId(cm);
    const report = (path: string, message: string) => problems.push({ configMap: id, path, message });
    const text = cm.data?.[CATALOG_CONFIGMAP_KEY];
    if (text === undefined) {
      report(
        '',
        `no data key ${CATALOG_CONFIGMAP_KEY}: put the catalog under data["${CATALOG_CONFIGMAP_KEY}"]`,
      );
      continue;
    }
    const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: true });
    if (doc.errors.length > 0) {
      report(
        '',
        `${CATALOG_CONFIGMAP_KEY} is not valid YAML, nothing loaded from it: ${doc.errors[0]!.message}`,
      );
      continue;
    }
    const root: unknown = doc.toJS();
    if (root === null || root === undefined) continue;
    if (!isObject(root)) {
      report('', `${CATALOG_CONFIGMAP_KEY} must be a mapping with the keys applications and templates`);
      continue;
    }
    for (const key of Object.keys(root)) {
      if (!TOP_LEVEL_KEYS.includes(key))
        report(key, `unknown key ${key}, ignored; a catalog has applications and templates`);
    }
    parseApplications(root.applications, id, catalog, report, options);
    parseTemplates(root.templates, id, catalog, templateSource, report, options);
  }
  return { catalog, problems };
}

type Report = (path: string, message: string) => void;

function parseApplications(
  apps: unknown,
  source: string,
  catalog: Catalog,
  report: Report,
  options: ParseOptions,
): void {
  if (apps === undefined || apps === null) return;
  if (!isObject(apps)) {
    report('applications', 'must be a mapping of catalog id to entry, e.g. applications: {nextcloud: {...}}');
    return;
  }
  for (const [appId, entry] of Object.entries(apps)) {
    const path = childPath('applications', appId);
    if (!applicationId.test(appId) || appId.length > 253) {
      report(
        path,
        `catalog id "${appId}" must be a DNS subdomain (lowercase letters, digits, '-' and '.'); entry skipped`,
      );
      continue;
    }
    const result = validateWithSchema(ApplicationEntrySchema, entry ?? {}, path);
    if (!result.ok) {
      report(path, `entry skipped: ${formatFieldErrors(result.errors)}`);
      continue;
    }
    const value = result.value as (typeof catalog.applications)[string];
    const windowProblem = value.maintenanceWindow && options.validateWindow?.(value.maintenanceWindow);
    if (windowProblem) {
      report(`${path}.maintenanceWindow`, `entry skipped: ${windowProblem}`);
      continue;
    }
    const earlier = catalog.applications[appId];
    if (earlier) {
      report(path, `entry skipped: ${appId} is already defined by ${earlier.source}`);
      continue;
    }
    catalog.applications[appId] = { ...value, source: `configmap ${source}` };
  }
}

function parseTemplates(
  templates: unknown,
  source: string,
  catalog: Catalog,
  seen: Map<string, string>,
  report: Report,
  options: ParseOptions,
): void {
  if (templates === undefined || templates === null) return;
  if (!Array.isArray(templates)) {
    report('templates', 'must be a list of templates');
    return;
  }
  templates.forEach((entry: unknown, i) => {
    const path = `templates[${i}]`;
    const disabled = isObject(entry) && entry.disabled === true;
    const result = validateWithSchema(disabled ? DisabledTemplateSchema : TemplateSchema, entry, path);
    const name = isObject(entry) && typeof entry.name === 'string' ? ` (${entry.name})` : '';
    if (!result.ok) {
      report(path, `template${name} skipped: ${formatFieldErrors(result.errors)}`);
      return;
    }
    const value = result.value as Template | { name: string; disabled: true };
    const problem =
      'disabled' in value && value.disabled ? undefined : checkTemplate(value as Template, path, options);
    if (problem) {
      report(problem.path, `template${name} skipped: ${problem.message}`);
      return;
    }
    const earlier = seen.get(value.name);
    if (earlier) {
      report(path, `template${name} skipped: ${value.name} is already defined by ${earlier}`);
      return;
    }
    seen.set(value.name, `configmap ${source}`);
    catalog.templates.push({ ...value, source: `configmap ${source}` });
  });
}

/** What the schema cannot say: engine/type pairs, a compilable inputSchema, consistent preconditions. */
function checkTemplate(
  t: Template,
  path: string,
  options: ParseOptions,
): { path: string; message: string } | undefined {
  if (!engineSupportsType(t.engine, t.type)) {
    return {
      path: `${path}.engine`,
      message: `engine ${t.engine} cannot run ${t.type}; it runs ${ENGINE_TYPES[t.engine].join(', ')}`,
    };
  }
  const schemaPath = `${path}.inputSchema`;
  const schemaProblem = objectSchemaProblem(t.inputSchema, path, 'inputSchema');
  if (schemaProblem) return schemaProblem;
  // The schema's own defaults must satisfy it, or every Operation relying on them would be refused.
  const defaults = validateWithSchema(t.inputSchema, {}, 'spec.parameters');
  const bad = defaults.ok ? [] : defaults.errors.filter((e) => e.type !== 'Required value');
  if (bad.length > 0)
    return { path: schemaPath, message: `a default does not satisfy the schema: ${formatFieldErrors(bad)}` };
  const names = new Set<string>();
  const properties = (t.inputSchema.properties ?? {}) as JsonSchema;
  for (const [i, p] of t.preconditions.entries()) {
    const pPath = `${path}.preconditions[${i}]`;
    if (names.has(p.name)) return { path: pPath, message: `${p.name} is listed twice` };
    names.add(p.name);
    const takesNames = p.name === 'RequiredSecretsPresent' || p.name === 'RequiredServiceAccountPresent';
    if ((p.parameter || p.names) && !takesNames) {
      return {
        path: pPath,
        message: `parameter and names only apply to RequiredSecretsPresent and RequiredServiceAccountPresent`,
      };
    }
    if (takesNames && !p.parameter && !p.names?.length) {
      return { path: pPath, message: `${p.name} needs parameter (the parameter naming the object) or names` };
    }
    if (p.parameter && !(p.parameter in properties)) {
      return { path: `${pPath}.parameter`, message: `inputSchema has no parameter ${p.parameter}` };
    }
  }
  const flowProblem = checkTemplateFlow(t, path);
  if (flowProblem) return flowProblem;
  const windowProblem = t.maintenanceWindow && options.validateWindow?.(t.maintenanceWindow);
  if (windowProblem) return { path: `${path}.maintenanceWindow`, message: windowProblem };
  return undefined;
}
