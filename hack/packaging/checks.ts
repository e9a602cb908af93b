// Checks of a bundle that neither opm nor operator-sdk make, as pure functions of parsed manifests:
// each returns the problems it finds (empty = fine), so tests can feed them broken fixtures too.
import { gzipSync } from 'node:zlib';
import { WEBHOOK_PATHS } from '@vworkspace/operator/packaging';

type Obj = Record<string, unknown>;

export interface Rule {
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  resourceNames?: readonly string[];
  nonResourceURLs?: readonly string[];
}

function obj(v: unknown): Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {};
}
function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
function strings(v: unknown): string[] {
  return list(v).filter((x): x is string => typeof x === 'string');
}

export function csvSpec(csv: Obj): Obj {
  return obj(csv.spec);
}

export function ownedCrds(csv: Obj): Obj[] {
  return list(obj(csvSpec(csv).customresourcedefinitions).owned).map(obj);
}

function installSpec(csv: Obj): Obj {
  return obj(obj(csvSpec(csv).install).spec);
}

export function deployments(csv: Obj): Obj[] {
  return list(installSpec(csv).deployments).map(obj);
}

export function containers(csv: Obj): Obj[] {
  return deployments(csv).flatMap((d) => list(obj(obj(obj(d.spec).template).spec).containers).map(obj));
}

/** Every owned CRD is in the bundle with the same kind and a served version; every bundled CRD is owned. */
export function ownedCrdProblems(csv: Obj, crds: readonly Obj[]): string[] {
  const problems: string[] = [];
  const byName = new Map(crds.map((c) => [String(obj(c.metadata).name), c]));
  const owned = ownedCrds(csv);
  for (const o of owned) {
    const crd = byName.get(String(o.name));
    if (!crd) {
      problems.push(`owned CRD ${String(o.name)} is not in bundle/manifests`);
      continue;
    }
    const spec = obj(crd.spec);
    if (obj(spec.names).kind !== o.kind)
      problems.push(
        `owned CRD ${String(o.name)}: kind ${String(o.kind)} but the CRD says ${String(obj(spec.names).kind)}`,
      );
    const served = list(spec.versions)
      .map(obj)
      .filter((v) => v.served === true)
      .map((v) => v.name);
    if (!served.includes(o.version))
      problems.push(`owned CRD ${String(o.name)}: version ${String(o.version)} is not served by the CRD`);
  }
  for (const name of byName.keys()) {
    if (!owned.some((o) => o.name === name))
      problems.push(`CRD ${name} is in the bundle but not owned by the CSV`);
  }
  return problems;
}

/** Webhook rules may only cover owned resources, and must point at the CSV's deployment. */
export function webhookProblems(csv: Obj): string[] {
  const problems: string[] = [];
  const owned = new Set(ownedCrds(csv).map((o) => String(o.name)));
  const deploymentNames = new Set(deployments(csv).map((d) => String(d.name)));
  for (const w of list(csvSpec(csv).webhookdefinitions).map(obj)) {
    const name = String(w.generateName);
    if (!deploymentNames.has(String(w.deploymentName)))
      problems.push(`webhook ${name}: deploymentName ${String(w.deploymentName)} is not a CSV deployment`);
    if (w.sideEffects !== 'None') problems.push(`webhook ${name}: sideEffects must be None`);
    // Fail everywhere (never admit on a guess), except where the controller enforces the same rule.
    const ignorable = w.webhookPath === WEBHOOK_PATHS.validateApplicationInstance;
    if (w.failurePolicy !== 'Fail' && !(ignorable && w.failurePolicy === 'Ignore'))
      problems.push(`webhook ${name}: failurePolicy must be Fail`);
    if (!strings(w.admissionReviewVersions).includes('v1'))
      problems.push(`webhook ${name}: must accept AdmissionReview v1`);
    for (const r of list(w.rules).map(obj)) {
      for (const g of strings(r.apiGroups)) {
        for (const res of strings(r.resources)) {
          const base = res.split('/')[0];
          if (!owned.has(`${base}.${g}`))
            problems.push(`webhook ${name}: rule on ${res}.${g}, which the CSV does not own`);
        }
      }
    }
  }
  return problems;
}

const DIGEST = /@sha256:[a-f0-9]{64}$/;

/** Every image is by digest; every RELATED_IMAGE_* env var and container image is a relatedImages entry. */
export function relatedImageProblems(csv: Obj): string[] {
  const problems: string[] = [];
  const related = list(csvSpec(csv).relatedImages).map(obj);
  const images = new Set(related.map((r) => String(r.image)));
  for (const r of related) {
    if (!DIGEST.test(String(r.image)))
      problems.push(`relatedImages ${String(r.name)}: ${String(r.image)} is not by digest`);
  }
  for (const c of containers(csv)) {
    const image = String(c.image);
    if (!images.has(image))
      problems.push(`container ${String(c.name)}: image ${image} is not in relatedImages`);
    for (const e of list(c.env).map(obj)) {
      const name = String(e.name);
      if (!name.startsWith('RELATED_IMAGE_')) continue;
      const value = typeof e.value === 'string' ? e.value : '';
      if (!DIGEST.test(value)) problems.push(`${name}: ${value || '(not a literal value)'} is not by digest`);
      else if (!images.has(value)) problems.push(`${name}: ${value} has no relatedImages entry`);
    }
  }
  const containerImage = obj(obj(csv.metadata).annotations).containerImage;
  if (typeof containerImage === 'string' && !images.has(containerImage))
    problems.push(`containerImage ${containerImage} is not in relatedImages`);
  return problems;
}

const DANGEROUS_VERBS = new Set(['*', 'escalate', 'bind', 'impersonate']);

function triples(rules: readonly Rule[]): Set<string> {
  const out = new Set<string>();
  for (const r of rules)
    for (const g of r.apiGroups)
      for (const res of r.resources) for (const v of r.verbs) out.add(`${v} ${res}.${g}`);
  return out;
}

/**
 * What `actual` grants beyond `allowed` (per verb, resource and group), plus what no rule of ours may ever
 * say: wildcards, escalate/bind/impersonate, non-resource URLs, and reading Secret data (get).
 */
export function rbacProblems(where: string, actual: readonly Rule[], allowed: readonly Rule[]): string[] {
  const problems: string[] = [];
  const permitted = triples(allowed);
  for (const r of actual) {
    if (r.nonResourceURLs?.length) problems.push(`${where}: nonResourceURLs ${r.nonResourceURLs.join(',')}`);
    for (const g of r.apiGroups) {
      if (g === '*') problems.push(`${where}: wildcard apiGroup`);
      for (const res of r.resources) {
        if (res === '*' || res.endsWith('/*')) problems.push(`${where}: wildcard resource ${res}.${g}`);
        for (const v of r.verbs) {
          if (DANGEROUS_VERBS.has(v)) problems.push(`${where}: verb ${v} on ${res}.${g}`);
          else if (!permitted.has(`${v} ${res}.${g}`))
            problems.push(`${where}: ${v} ${res}.${g} is not in the declared list`);
        }
      }
    }
  }
  return problems;
}

/**
 * The one cluster-wide write outside the operator's own groups: a Verify's scratch namespace, created and
 * deleted by its recorded uid (docs/adr/0054-restore-drills.md). Exactly this rule; nothing broader.
 */
function isScratchNamespaceRule(r: Rule, writes: readonly string[]): boolean {
  return (
    r.apiGroups.length === 1 &&
    r.apiGroups[0] === '' &&
    r.resources.length === 1 &&
    r.resources[0] === 'namespaces' &&
    writes.every((v) => v === 'create' || v === 'delete')
  );
}

/**
 * The cluster-wide rules may write only the operator's own kinds, Events and access reviews, and create and
 * delete namespaces (a Verify's scratch namespace).
 */
export function clusterWriteProblems(rules: readonly Rule[], ownGroups: readonly string[]): string[] {
  const writable = new Set([...ownGroups, 'events.k8s.io', 'authorization.k8s.io']);
  const problems: string[] = [];
  for (const r of rules) {
    // Secrets are watched as metadata and release records listed by name; `get` is never needed.
    if (r.apiGroups.includes('') && r.resources.includes('secrets') && r.verbs.includes('get'))
      problems.push('cluster-wide get secrets');
    const writes = r.verbs.filter((v) => !['get', 'list', 'watch'].includes(v));
    if (isScratchNamespaceRule(r, writes)) continue;
    for (const g of writes.length > 0 ? r.apiGroups : []) {
      if (!writable.has(g))
        problems.push(`cluster-wide ${writes.join(',')} on ${r.resources.join(',')}.${g}`);
    }
  }
  return problems;
}

export const MAX_BUNDLE_GZIP_BYTES = 1024 * 1024;

/** The size OLM limits: the bundle's manifests and metadata, gzipped. */
export function bundleGzipBytes(files: readonly { path: string; content: string }[]): number {
  return gzipSync(Buffer.concat(files.map((f) => Buffer.from(`${f.path}\n${f.content}`)))).length;
}

export function bundleSizeProblems(files: readonly { path: string; content: string }[]): string[] {
  const size = bundleGzipBytes(files);
  return size > MAX_BUNDLE_GZIP_BYTES
    ? [`bundle is ${size} bytes gzipped, over the ${MAX_BUNDLE_GZIP_BYTES} limit`]
    : [];
}

/** Every spec/status descriptor path exists in the owned CRD's schema. */
export function descriptorProblems(csv: Obj, crds: readonly Obj[]): string[] {
  const problems: string[] = [];
  for (const o of ownedCrds(csv)) {
    const crd = crds.find((c) => obj(c.metadata).name === o.name);
    const version = list(obj(crd?.spec).versions)
      .map(obj)
      .find((v) => v.name === o.version);
    const root = obj(obj(obj(version?.schema).openAPIV3Schema).properties);
    for (const [kind, key] of [
      ['spec', 'specDescriptors'],
      ['status', 'statusDescriptors'],
    ] as const) {
      for (const d of list(o[key]).map(obj)) {
        let node = obj(root[kind]);
        for (const part of String(d.path).split('.')) node = obj(obj(node.properties)[part]);
        if (Object.keys(node).length === 0)
          problems.push(`${String(o.kind)} ${key}: ${kind}.${String(d.path)} is not in the schema`);
      }
    }
  }
  return problems;
}

/** alm-examples: valid JSON, exactly one object per owned kind, with the owned group/version. */
export function almExampleProblems(csv: Obj): string[] {
  const raw = obj(obj(csv.metadata).annotations)['alm-examples'];
  let examples: Obj[];
  try {
    examples = list(JSON.parse(String(raw))).map(obj);
  } catch (err) {
    return [`alm-examples is not JSON: ${String(err)}`];
  }
  const problems: string[] = [];
  for (const o of ownedCrds(csv)) {
    const group = String(o.name).split('.').slice(1).join('.');
    const matching = examples.filter(
      (e) => e.kind === o.kind && e.apiVersion === `${group}/${String(o.version)}`,
    );
    if (matching.length !== 1)
      problems.push(`alm-examples has ${matching.length} ${String(o.kind)} examples, want 1`);
  }
  return problems;
}
