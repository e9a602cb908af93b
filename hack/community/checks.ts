// The community operator pipeline's static tests ("community" and "common" suites), ported.
//
// The pipeline's package (operatorcert, github.com/redhat-openshift-ecosystem/operator-pipelines) is not
// published on PyPI, so its checks are re-implemented here from its source, one function per check with
// the same name and the same verdicts (Fail = 'failure', Warn = 'warning'). Files cited:
//   community bundle    operatorcert/static_tests/community/bundle.py (+ validations.py)
//   community operator  operatorcert/static_tests/community/operator.py
//   common bundle       operatorcert/static_tests/common/bundle.py
//   common operator     operatorcert/static_tests/common/operator.py
//   common catalogs     operatorcert/static_tests/common/operator_catalogs.py
//   skip for FBC        operatorcert/static_tests/helpers.py (skip_fbc)
//   graph, channels     operatorcert/operator_repo/core.py (Operator.update_graph, head, channel_bundles)
// Two inputs the pipeline fetches from the network are replaced by local tables, and said where used:
// the OpenShift releases an index selector covers (Pyxis API → openshift.ts) and the ci.yaml JSON
// schema file (→ CI_SCHEMA, the same constraints written out).
import { Ajv } from 'ajv';
import { OPENSHIFT_KUBERNETES } from '../packaging/openshift.ts';
import {
  type Bundle,
  type CommunityRepo,
  channelsOf,
  csvNameParts,
  csvVersionOf,
  defaultChannelOf,
  fbcEnabled,
  type Operator,
  type OperatorCatalog,
} from './repo.ts';
import { compareSemver, isSemver, parseSemver, satisfies } from './semver.ts';

type Obj = Record<string, unknown>;

export interface CheckResult {
  check: string;
  level: 'failure' | 'warning';
  message: string;
  /** operator name, `<operator>/<version>`, or `catalogs` */
  target: string;
}

type Verdict = Omit<CheckResult, 'check' | 'target'>;
const fail = (message: string): Verdict => ({ level: 'failure', message });
const warn = (message: string): Verdict => ({ level: 'warning', message });

/** Runs `operator-sdk bundle validate` the way the pipeline does and returns its report's outputs. */
export type SdkRunner = (
  bundleDir: string,
  selector: string,
  k8sVersion: string,
) => { type: string; message: string }[] | undefined;

// ---------------------------------------------------------------------------------------------------
// OpenShift versions (community/bundle.py OCP_TO_K8S, find_closest_ocp_version, check_api_version_constraints)

const OCP = OPENSHIFT_KUBERNETES.map(([ocp, kube]) => ({
  ocp: parseSemver(`${ocp}.0`),
  kube: parseSemver(`${kube}.0`),
}));
const cmp = (a: { major: number; minor: number }, b: { major: number; minor: number }) =>
  a.major - b.major || a.minor - b.minor;
const ocpVer = (s: string) => {
  const m = /^v?(\d+)\.(\d+)/.exec(s.trim());
  if (!m) throw new Error(`invalid OpenShift version ${JSON.stringify(s)}`);
  return { major: Number(m[1]), minor: Number(m[2]) };
};

/** The releases of the table an index selector covers ("v4.17", "=v4.17", "v4.15-v4.17", "v4.5,v4.6"). */
export function selectedReleases(selector: string): { major: number; minor: number }[] {
  const s = selector.trim();
  if (s.includes('-')) {
    const [a, b] = s.split('-', 2).map(ocpVer) as [ReturnType<typeof ocpVer>, ReturnType<typeof ocpVer>];
    return OCP.map((o) => o.ocp).filter((v) => cmp(v, a) >= 0 && cmp(v, b) <= 0);
  }
  if (s.includes(',')) {
    const min = s.split(',').map(ocpVer).sort(cmp)[0]!;
    return OCP.map((o) => o.ocp).filter((v) => cmp(v, min) >= 0);
  }
  if (s.startsWith('=')) {
    const want = ocpVer(s.slice(1));
    const known = OCP.map((o) => o.ocp).filter((v) => cmp(v, want) <= 0);
    return [known.at(-1) ?? OCP[0]!.ocp];
  }
  const min = ocpVer(s);
  return OCP.map((o) => o.ocp).filter((v) => cmp(v, min) >= 0);
}

const kubeOf = (v: { major: number; minor: number }) => OCP.find((o) => cmp(o.ocp, v) === 0)!.kube;

// ---------------------------------------------------------------------------------------------------
// community bundle suite

/** community/validations.py */
const CAPABILITIES = ['Basic Install', 'Seamless Upgrades', 'Full Lifecycle', 'Deep Insights', 'Auto Pilot'];
const CATEGORIES = [
  'AI/Machine Learning',
  'Application Runtime',
  'Big Data',
  'Cloud Provider',
  'Developer Tools',
  'Database',
  'Drivers and plugins',
  'Integration & Delivery',
  'Logging & Tracing',
  'Modernization & Migration',
  'Monitoring',
  'Networking',
  'OpenShift Optional',
  'Security',
  'Storage',
  'Streaming & Messaging',
];

const listOf = (v: unknown, fields: string[]) =>
  Array.isArray(v) &&
  v.every(
    (i) => typeof i === 'object' && i !== null && fields.every((f) => typeof (i as Obj)[f] === 'string'),
  );

function validIcon(v: unknown): boolean {
  if (!listOf(v, ['base64data', 'mediatype']) || (v as unknown[]).length < 1) return false;
  return (v as { base64data: string; mediatype: string }[]).every((i) => {
    const data = i.base64data.replace(/\s/g, '');
    return (
      data.length >= 4 &&
      /^[A-Za-z0-9+/]*={0,2}$/.test(data) &&
      data.length % 4 === 0 &&
      ['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml'].includes(i.mediatype)
    );
  });
}

function lookup(o: unknown, path: string): unknown {
  let cur = o;
  for (const k of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Obj)[k];
  }
  return cur;
}

/** community/bundle.py check_required_fields: [field, valid?, fatal] */
const REQUIRED_FIELDS: [string, (v: unknown) => boolean, boolean][] = [
  ['metadata.annotations.capabilities', (v) => typeof v === 'string' && CAPABILITIES.includes(v), false],
  [
    'metadata.annotations.categories',
    (v) =>
      String(v)
        .split(',')
        .every((c) => CATEGORIES.includes(c.trim())),
    false,
  ],
  ['metadata.annotations.containerImage', (v) => /^([^/]+\/){1,}[^/:]+:.+/.test(String(v)), false],
  ['metadata.annotations.createdAt', (v) => v instanceof Date || !Number.isNaN(Date.parse(String(v))), false],
  ['metadata.annotations.repository', (v) => /^https?:\/\/.+/.test(String(v)), false],
  ['metadata.annotations.support', (v) => /^[\s\S]{3,}/.test(String(v)), false],
  ['metadata.annotations.description', (v) => /^[\s\S]{10,}/.test(String(v)), false],
  ['spec.displayName', (v) => /^.{3,50}/.test(String(v)), true],
  ['spec.description', (v) => /^[\s\S]{20,}/.test(String(v)), true],
  ['spec.icon', validIcon, true],
  ['spec.version', isSemver, true],
  ['spec.maintainers', (v) => listOf(v, ['name', 'email']) && (v as unknown[]).length > 0, true],
  ['spec.provider.name', (v) => /^.{3,}/.test(String(v)), true],
  ['spec.links', (v) => listOf(v, ['name', 'url']) && (v as unknown[]).length > 0, true],
  ['spec.keywords', (v) => Array.isArray(v) && v.length > 0 && v.every((k) => typeof k === 'string'), false],
];

export function check_required_fields(b: Bundle): Verdict[] {
  const out: Verdict[] = [];
  for (const [field, valid, fatal] of REQUIRED_FIELDS) {
    const v = lookup(b.csv, field);
    if (v !== undefined && v !== null && valid(v)) continue;
    const message =
      v === undefined || v === null
        ? `CSV does not define ${field}`
        : `CSV contains an invalid value for ${field}`;
    out.push(fatal ? fail(message) : warn(message));
  }
  return out;
}

/** The newest OpenShift release the bundle's annotation selects, and its Kubernetes (run_operator_sdk_bundle_validate). */
export function deprecationTestKubeVersion(b: Bundle): string | undefined {
  const sel = b.annotations['com.redhat.openshift.versions'];
  // The pipeline asks Pyxis which indices the selector covers and takes the newest; offline, the table's.
  const releases = sel ? selectedReleases(sel) : OCP.map((o) => o.ocp);
  const newest = releases.at(-1);
  if (!newest) return undefined;
  const k = kubeOf(newest);
  return `${k.major}.${k.minor}`;
}

function sdkCheck(b: Bundle, selector: string, run: SdkRunner): Verdict[] {
  const k8s = deprecationTestKubeVersion(b);
  if (!k8s) return [];
  const outputs = run(b.root, selector, k8s);
  if (!outputs) return [fail('operator-sdk returned non-JSON output when validating bundle')];
  return outputs.map((o) => (o.type === 'error' ? fail(o.message) : warn(o.message)));
}

/** Operator.update_graph in replaces-mode: bundle → the bundles that can replace it, in one channel. */
export function updateGraph(op: Operator, channel: string): Map<Bundle, Set<Bundle>> {
  const inChannel = op.bundles.filter((b) => channelsOf(b).includes(channel));
  const strategy = (op.config.updateGraph as string | undefined) ?? 'replaces-mode';
  const edges = new Map<Bundle, Set<Bundle>>();
  const add = (from: Bundle, to: Bundle) => edges.set(from, (edges.get(from) ?? new Set()).add(to));
  if (strategy === 'semver-mode') {
    inChannel.forEach((b, i) => {
      const next = inChannel[i + 1];
      if (next) add(b, next);
    });
    return edges;
  }
  if (strategy !== 'replaces-mode') throw new Error(`${op.name}: unsupported updateGraph value: ${strategy}`);
  const byVersion = new Map(inChannel.map((b) => [csvVersionOf(b), b]));
  for (const b of inChannel) {
    const range = b.csv.metadata?.annotations?.['olm.skipRange'];
    if (range) for (const [v, other] of byVersion) if (satisfies(v, range)) add(other, b);
    const spec = (b.csv.spec ?? {}) as { replaces?: string; skips?: string[] };
    for (const name of [...(spec.skips ?? []), ...(spec.replaces ? [spec.replaces] : [])]) {
      if (!name.includes('.')) throw new Error(`${b.dir} has invalid 'replaces' field: '${name}'`);
      const replaced = byVersion.get(name.slice(name.indexOf('.') + 1).replace(/^v/, ''));
      if (replaced) add(replaced, b);
    }
  }
  return edges;
}

function allChannels(op: Operator, bundles: readonly Bundle[] = op.bundles): string[] {
  const set = new Set<string>();
  for (const b of bundles) {
    for (const c of channelsOf(b)) set.add(c);
    const d = defaultChannelOf(b);
    if (d) set.add(d);
  }
  return [...set].sort();
}

export function check_dangling_bundles(b: Bundle, op: Operator): Verdict[] {
  const out: Verdict[] = [];
  for (const channel of allChannels(op, [b])) {
    const inChannel = op.bundles.filter((x) => channelsOf(x).includes(channel));
    const head = inChannel.at(-1);
    let graph: Map<Bundle, Set<Bundle>>;
    try {
      graph = updateGraph(op, channel);
    } catch (e) {
      return [fail((e as Error).message)];
    }
    const dangling = inChannel.filter((x) => !graph.has(x) && x !== head);
    if (dangling.length > 0)
      out.push(
        fail(
          `Channel ${channel} has dangling bundles: {${dangling.map((x) => `${op.name}/${x.dir}`).join(', ')}}`,
        ),
      );
  }
  return out;
}

export function check_api_version_constraints(b: Bundle): Verdict[] {
  const min = (b.csv.spec as { minKubeVersion?: string } | undefined)?.minKubeVersion;
  if (!min) return [];
  let kube: ReturnType<typeof parseSemver>;
  try {
    kube = parseSemver(/^\d+\.\d+$/.test(min.trim()) ? `${min.trim()}.0` : min);
  } catch (e) {
    return [fail(`Invalid minKubeVersion: ${(e as Error).message}`)];
  }
  const sel = b.annotations['com.redhat.openshift.versions'];
  if (!sel) return [fail(`minKubeVersion is set to ${min} but com.redhat.openshift.versions is not set`)];
  const out: Verdict[] = [];
  if (sel.includes(',') && !sel.includes('-')) {
    const set = new Set(sel.split(',').map((v) => JSON.stringify(ocpVer(v))));
    if (
      set.size !== 2 ||
      !set.has(JSON.stringify(ocpVer('v4.5'))) ||
      !set.has(JSON.stringify(ocpVer('v4.6')))
    )
      out.push(
        warn(
          'Comma separated list of versions in com.redhat.openshift.versions is only supported for v4.5 and v4.6',
        ),
      );
  }
  const conflicting = selectedReleases(sel).filter((v) => cmp(kubeOf(v), kube) < 0);
  if (conflicting.length > 0)
    out.push(
      fail(
        `OCP version(s) ${conflicting.map((v) => `${v.major}.${v.minor}`).join(',')} conflict with minKubeVersion=${min}`,
      ),
    );
  return out;
}

export function check_using_fbc(b: Bundle, op: Operator): Verdict[] {
  return op.bundles.some((x) => x !== b)
    ? [
        warn(
          'This operator does not use FBC. Consider migrating to File Based Catalog for better maintainability.',
        ),
      ]
    : [
        warn(
          'This operator does not use FBC and it is recommended for new operators to start directly with FBC.',
        ),
      ];
}

// ---------------------------------------------------------------------------------------------------
// community operator suite

export function check_operator_name_unique(op: Operator): Verdict[] {
  const names = new Set(op.bundles.map((b) => csvNameParts(b).name));
  return names.size > 1 ? [fail(`Bundles use multiple operator names: {${[...names].join(', ')}}`)] : [];
}

export function check_ci_upgrade_graph(op: Operator): Verdict[] {
  const g = op.config.updateGraph;
  if (!g)
    return [
      warn(
        "The 'updateGraph' option is missing in ci.yaml. The default upgrade graph 'replaces-mode' will be used.",
      ),
    ];
  return g === 'replaces-mode' || g === 'semver-mode'
    ? []
    : [fail("The 'updateGraph' option in ci.yaml must be one of ['replaces-mode', 'semver-mode']")];
}

export function check_upgrade_graph_loop(op: Operator): Verdict[] {
  for (const channel of allChannels(op)) {
    let graph: Map<Bundle, Set<Bundle>>;
    try {
      graph = updateGraph(op, channel);
    } catch (e) {
      return [fail((e as Error).message)];
    }
    const visited = new Set<Bundle>();
    const stack = new Set<Bundle>();
    const dfs = (n: Bundle): [Bundle, Bundle] | undefined => {
      visited.add(n);
      stack.add(n);
      for (const m of graph.get(n) ?? []) {
        if (!visited.has(m)) {
          const r = dfs(m);
          if (r) return r;
        } else if (stack.has(m)) return [n, m];
      }
      stack.delete(n);
      return undefined;
    };
    for (const n of graph.keys()) {
      const edge = visited.has(n) ? undefined : dfs(n);
      if (edge) return [fail(`Upgrade graph loop detected: ${edge[0].dir} -> ${edge[1].dir}`)];
    }
  }
  return [];
}

// ---------------------------------------------------------------------------------------------------
// common bundle suite

export function check_operator_name(b: Bundle, op: Operator): Verdict[] {
  const meta = b.annotations['operators.operatorframework.io.bundle.package.v1'];
  if (!meta) return [fail('Bundle does not define the operator name in annotations.yaml')];
  const others = op.bundles.filter((x) => x !== b);
  const out: Verdict[] = [];
  const consistent = (mine: string, theirs: Set<string>, what: string) => {
    if (theirs.size === 1) {
      const common = [...theirs][0]!;
      if (common !== mine)
        out.push(
          fail(
            `Operator name ${what} (${mine}) does not match the name defined in other bundles (${common})`,
          ),
        );
    } else out.push(warn(`Operator name ${what} is not consistent across bundles`));
  };
  const csvName = csvNameParts(b).name;
  if (others.length > 0) {
    consistent(
      meta,
      new Set(others.map((x) => x.annotations['operators.operatorframework.io.bundle.package.v1'] ?? '')),
      'from annotations.yaml',
    );
    consistent(csvName, new Set(others.map((x) => csvNameParts(x).name)), 'from the CSV');
  }
  const severity = others.length > 0 ? warn : fail;
  if (meta !== csvName)
    out.push(
      severity(
        `Operator name from annotations.yaml (${meta}) does not match the name defined in the CSV (${csvName})`,
      ),
    );
  if (meta !== op.name)
    out.push(
      severity(
        `Operator name from annotations.yaml (${meta}) does not match the operator's directory name (${op.name})`,
      ),
    );
  return out;
}

export function check_bundle_release_config(b: Bundle, op: Operator): Verdict[] {
  if (!b.releaseConfig) return [];
  if (!fbcEnabled(op))
    return [
      fail(
        "Bundle's 'release-config.yaml' is used but FBC is not enabled for the operator. Update the 'fbc.enabled' field in the ci.yaml file.",
      ),
    ];
  const mapping = ((op.config.fbc as Obj | undefined)?.catalog_mapping ?? []) as {
    template_name: string;
    type: string;
  }[];
  const out: Verdict[] = [];
  for (const t of (b.releaseConfig.catalog_templates ?? []) as {
    template_name: string;
    channels: string[];
  }[]) {
    const m = mapping.find((x) => x.template_name === t.template_name);
    if (!m)
      out.push(
        fail(
          `Bundle's 'release-config.yaml' contains a catalog template '${t.template_name}' that is not defined in the ci.yaml file under 'catalog_mapping'.`,
        ),
      );
    else if (m.type === 'olm.semver' && !t.channels.every((c) => ['Fast', 'Candidate', 'Stable'].includes(c)))
      out.push(
        fail(
          `Bundle's 'release-config.yaml' contains a semver catalog template '${t.template_name}' with invalid channels: ${t.channels}.`,
        ),
      );
  }
  return out;
}

const ajv = new Ajv({ allErrors: true, strict: false });

/** common/bundle.py check_validate_schema_bundle_release_config (schemas/release-config-schema.json). */
const RELEASE_CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['catalog_templates'],
  properties: {
    merge: { type: 'boolean' },
    catalog_templates: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: {
        type: 'object',
        required: ['template_name', 'channels'],
        additionalProperties: false,
        properties: {
          template_name: { type: 'string' },
          channels: { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true },
          defaultChannel: { type: 'string' },
          replaces: { type: 'string' },
          skips: { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true },
          skipRange: { type: 'string' },
        },
      },
    },
  },
};
const validateReleaseConfig = ajv.compile(RELEASE_CONFIG_SCHEMA);

export function check_validate_schema_bundle_release_config(b: Bundle): Verdict[] {
  if (!b.releaseConfig || validateReleaseConfig(b.releaseConfig)) return [];
  return (validateReleaseConfig.errors ?? []).map((e) =>
    fail(
      `Bundle's 'release-config.yaml' contains invalid data which does not comply with the schema: ${e.instancePath} ${e.message}`,
    ),
  );
}

export function check_network_policy_presence(b: Bundle): Verdict[] {
  return b.manifests
    .filter(
      (m) =>
        m.content.kind === 'NetworkPolicy' &&
        String(m.content.apiVersion ?? '').startsWith('networking.k8s.io/'),
    )
    .map((m) =>
      fail(
        `Bundle contains a NetworkPolicy in ${m.file}. Network policies are not a supported resource that Operator Lifecycle Manager(OLM) can install and manage.`,
      ),
    );
}

export function check_operator_version_directory_name(b: Bundle, op: Operator): Verdict[] {
  const v = (b.csv.spec as { version?: string } | undefined)?.version ?? '';
  return v === b.dir
    ? []
    : [
        fail(
          `Bundle directory name '${op.name}/${b.dir}' does not match the expected operator CSV version '${v}' from ./operators/${op.name}/${b.dir}/manifests/${b.csvFile}.`,
        ),
      ];
}

export function check_replaces_availability(b: Bundle, op: Operator): Verdict[] {
  const replaces = (b.csv.spec as { replaces?: string } | undefined)?.replaces;
  if (!replaces) return [];
  const delim = replaces.includes('.v') ? '.v' : '.';
  const version = replaces.slice(replaces.indexOf(delim) + delim.length);
  if (version === csvVersionOf(b))
    return [
      fail(
        `${b.dir} attempts to replace itself. Please set 'spec.replaces' field to a different version in the CSV.`,
      ),
    ];
  const target = op.bundles.find((x) => csvVersionOf(x) === version);
  if (!target)
    return [
      fail(
        `${b.dir} attempts to replace version '${version}' which does not exist in the submitted PR branch. Available versions: ${op.bundles.map(csvVersionOf).sort(compareSemver).join(', ')}.`,
      ),
    ];
  const mine = b.annotations['com.redhat.openshift.versions'];
  const theirs = target.annotations['com.redhat.openshift.versions'];
  if (mine === theirs) return [];
  // The pipeline asks Pyxis for the indices each selector covers; offline, the table's releases.
  const covered = (s: string | undefined) =>
    new Set((s ? selectedReleases(s) : OCP.map((o) => o.ocp)).map((v) => `${v.major}.${v.minor}`));
  const extra = [...covered(mine)].filter((v) => !covered(theirs).has(v));
  return extra.length === 0
    ? []
    : [
        fail(
          `Replaces bundle ${target.dir} does not support the same OCP versions as bundle ${b.dir} (${extra.join(', ')}). Align com.redhat.openshift.versions in metadata/annotations.yaml.`,
        ),
      ];
}

// ---------------------------------------------------------------------------------------------------
// common operator suite

/** schemas/ci-schema.json, the constraints it states. */
const CI_SCHEMA = {
  type: 'object',
  additionalProperties: true,
  properties: {
    updateGraph: { type: 'string', enum: ['replaces-mode', 'semver-mode'] },
    reviewers: { type: 'array', items: { type: 'string' }, minItems: 1 },
    merge: { type: 'boolean' },
    cert_project_id: { type: 'string' },
    fbc: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        version_promotion_strategy: { type: 'string', enum: ['review-needed', 'always', 'never'] },
        catalog_mapping: {
          type: 'array',
          items: {
            type: 'object',
            required: ['template_name', 'type', 'catalog_names'],
            properties: {
              template_name: { type: 'string' },
              catalog_names: { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true },
              type: { type: 'string', enum: ['olm.template.basic', 'olm.semver'] },
            },
          },
        },
      },
    },
  },
};
const validateCi = ajv.compile(CI_SCHEMA);

export function check_schema_operator_ci_config(op: Operator): Verdict[] {
  if (validateCi(op.config)) return [];
  return (validateCi.errors ?? []).map((e) =>
    fail(
      `Operator's 'ci.yaml' contains invalid data which does not comply with the schema: ${e.instancePath} ${e.message}`,
    ),
  );
}

export function check_catalog_usage_ci_config(op: Operator): Verdict[] {
  const mapping = ((op.config.fbc as Obj | undefined)?.catalog_mapping ?? []) as {
    template_name: string;
    catalog_names?: string[];
  }[];
  const byCatalog = new Map<string, string[]>();
  for (const t of mapping)
    for (const c of t.catalog_names ?? []) byCatalog.set(c, [...(byCatalog.get(c) ?? []), t.template_name]);
  return [...byCatalog]
    .filter(([, ts]) => ts.length > 1)
    .map(([c, ts]) =>
      fail(
        `Operator's 'ci.yaml' contains multiple templates '${ts.join(', ')}' for the same catalog '${c}'.`,
      ),
    );
}

// ---------------------------------------------------------------------------------------------------
// common catalogs suite

export function check_bundle_images_in_fbc(
  catalogs: readonly OperatorCatalog[],
  repo: CommunityRepo,
): Verdict[] {
  const allowed = (repo.config.allowed_bundle_registries ?? []) as string[];
  if (allowed.length === 0) return [];
  const out: Verdict[] = [];
  for (const c of catalogs) {
    const bad = c.blobs
      .filter((b) => b.schema === 'olm.bundle' && typeof b.image === 'string' && b.image)
      .map((b) => String(b.image))
      .filter((img) => !allowed.some((r) => img.startsWith(r)));
    if (bad.length > 0)
      out.push(
        fail(
          `Invalid bundle image(s) found in ${c.catalog}/${c.operator}: ${bad.join(', ')}. Only these registries are allowed for bundle images: ${allowed.join(', ')}.`,
        ),
      );
  }
  return out;
}

const atLeast417 = (name: string) => {
  const m = /^v(\d+)\.(\d+)$/.exec(name);
  return !!m && (Number(m[1]) > 4 || (Number(m[1]) === 4 && Number(m[2]) >= 17));
};

/**
 * Upstream looks at the first olm.bundle of each catalog only (a `break` after it); this looks at every
 * bundle, which finds everything upstream finds and more.
 */
export function check_olm_bundle_object_in_fbc(catalogs: readonly OperatorCatalog[]): Verdict[] {
  const out: Verdict[] = [];
  for (const c of catalogs.filter((x) => atLeast417(x.catalog)))
    for (const b of c.blobs.filter((x) => x.schema === 'olm.bundle'))
      if (((b.properties ?? []) as { type?: string }[]).some((p) => p.type === 'olm.bundle.object'))
        out.push(
          fail(
            `Bundle object found in ${c.catalog}/${c.operator} catalog uses 'olm.bundle.object'. This is not allowed for catalogs with version >= 4.17. Render catalog again with --migrate-level bundle-object-to-csv-metadata.`,
          ),
        );
  return out;
}

// ---------------------------------------------------------------------------------------------------

export interface RunOptions {
  sdk: SdkRunner;
  /** Check names to leave out (the pipeline's --skip-tests). */
  skip?: readonly string[];
}

/**
 * Both suites over every operator, every bundle (as if each were the one submitted) and all catalogs.
 * Checks marked skip_fbc upstream run only for operators without `fbc.enabled` in ci.yaml.
 */
export function runSuites(repo: CommunityRepo, opts: RunOptions): CheckResult[] {
  const out: CheckResult[] = [];
  const run = (check: string, target: string, verdicts: () => Verdict[]) => {
    if (opts.skip?.includes(check)) return;
    try {
      for (const v of verdicts()) out.push({ check, target, ...v });
    } catch (e) {
      out.push({ check, target, level: 'failure', message: `check crashed: ${(e as Error).stack}` });
    }
  };
  for (const op of repo.operators) {
    const bundleOnly = !fbcEnabled(op);
    run('check_schema_operator_ci_config', op.name, () => check_schema_operator_ci_config(op));
    run('check_catalog_usage_ci_config', op.name, () => check_catalog_usage_ci_config(op));
    if (bundleOnly) {
      run('check_operator_name_unique', op.name, () => check_operator_name_unique(op));
      run('check_ci_upgrade_graph', op.name, () => check_ci_upgrade_graph(op));
      run('check_upgrade_graph_loop', op.name, () => check_upgrade_graph_loop(op));
    }
    for (const b of op.bundles) {
      const t = `${op.name}/${b.dir}`;
      run('check_osdk_bundle_validate_operatorhub', t, () => sdkCheck(b, 'name=operatorhub', opts.sdk));
      run('check_osdk_bundle_validate_operator_framework', t, () =>
        sdkCheck(b, 'suite=operatorframework', opts.sdk),
      );
      run('check_required_fields', t, () => check_required_fields(b));
      run('check_operator_name', t, () => check_operator_name(b, op));
      run('check_bundle_release_config', t, () => check_bundle_release_config(b, op));
      run('check_validate_schema_bundle_release_config', t, () =>
        check_validate_schema_bundle_release_config(b),
      );
      run('check_network_policy_presence', t, () => check_network_policy_presence(b));
      run('check_operator_version_directory_name', t, () => check_operator_version_directory_name(b, op));
      if (bundleOnly) {
        run('check_dangling_bundles', t, () => check_dangling_bundles(b, op));
        run('check_api_version_constraints', t, () => check_api_version_constraints(b));
        run('check_replaces_availability', t, () => check_replaces_availability(b, op));
        run('check_using_fbc', t, () => check_using_fbc(b, op));
      }
    }
  }
  run('check_bundle_images_in_fbc', 'catalogs', () => check_bundle_images_in_fbc(repo.catalogs, repo));
  run('check_olm_bundle_object_in_fbc', 'catalogs', () => check_olm_bundle_object_in_fbc(repo.catalogs));
  return out;
}
