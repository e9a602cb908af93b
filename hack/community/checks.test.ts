// The ported community pipeline checks give the pipeline's verdicts: each finding the issue reported
// against the project is found on a bundle built to have it, and not on ours.
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { bundleFiles, CSV_PATH, resolveOptions } from '../bundle.ts';
import { committedTemplate } from '../images/build.ts';
import { communityCatalogs } from '../packaging/openshift.ts';
import {
  check_api_version_constraints,
  check_ci_upgrade_graph,
  check_dangling_bundles,
  check_network_policy_presence,
  check_olm_bundle_object_in_fbc,
  check_operator_name,
  check_operator_version_directory_name,
  check_replaces_availability,
  check_required_fields,
  check_schema_operator_ci_config,
  check_upgrade_graph_loop,
  check_validate_schema_bundle_release_config,
  deprecationTestKubeVersion,
  runSuites,
  selectedReleases,
} from './checks.ts';
import { ciConfig, releaseConfig } from './layout.ts';
import type { Bundle, CommunityRepo, Operator } from './repo.ts';
import { validatorNames } from './sdk.ts';
import { compareSemver, satisfies } from './semver.ts';

type Obj = Record<string, unknown>;
const PKG = 'vworkspace-operator';

/** A bundle of our operator at `version` as hack/bundle.ts makes it, with overrides. */
function ours(version: string): Bundle {
  const files = bundleFiles(resolveOptions({ VERSION: version }));
  const csv = YAML.parse(files.find((f) => f.path === CSV_PATH)!.content) as Bundle['csv'];
  const annotations = YAML.parse(files.find((f) => f.path === 'bundle/metadata/annotations.yaml')!.content)
    .annotations as Record<string, string>;
  return {
    dir: version,
    root: `/x/${PKG}/${version}`,
    annotations,
    csv,
    csvFile: `${PKG}.clusterserviceversion.yaml`,
    manifests: [{ file: 'csv.yaml', content: csv }],
  };
}

function bare(
  version: string,
  opts: { replaces?: string; skipRange?: string; openshift?: string } = {},
): Bundle {
  const b = ours(version);
  const spec = { ...(b.csv.spec as Obj) };
  delete spec.replaces;
  if (opts.replaces) spec.replaces = opts.replaces;
  const annotations = { ...(b.csv.metadata?.annotations ?? {}) };
  delete annotations['olm.skipRange'];
  if (opts.skipRange) annotations['olm.skipRange'] = opts.skipRange;
  const bundleAnnotations = { ...b.annotations };
  if (opts.openshift === undefined) delete bundleAnnotations['com.redhat.openshift.versions'];
  else bundleAnnotations['com.redhat.openshift.versions'] = opts.openshift;
  return {
    ...b,
    annotations: bundleAnnotations,
    csv: { ...b.csv, metadata: { ...b.csv.metadata, annotations }, spec },
  };
}

const operator = (bundles: Bundle[], config: Obj = { updateGraph: 'replaces-mode' }): Operator => ({
  name: PKG,
  root: `/x/${PKG}`,
  config,
  bundles: [...bundles].sort((a, b) => compareSemver(a.dir, b.dir)),
});

describe('the findings the issue reported', () => {
  it('check_api_version_constraints: minKubeVersion without com.redhat.openshift.versions fails; ours passes', () => {
    expect(check_api_version_constraints(bare('0.1.0'))).toEqual([
      {
        level: 'failure',
        message: 'minKubeVersion is set to 1.30.0 but com.redhat.openshift.versions is not set',
      },
    ]);
    expect(check_api_version_constraints(bare('0.1.0', { openshift: 'v4.16' }))[0]?.message).toBe(
      'OCP version(s) 4.16 conflict with minKubeVersion=1.30.0',
    );
    expect(check_api_version_constraints(ours('0.1.0'))).toEqual([]);
  });

  it('check_dangling_bundles: CSVs without replaces/skipRange leave 0.0.9 dangling; ours carry the edges', () => {
    const dangling = operator([bare('0.0.9', { openshift: 'v4.17' }), bare('0.1.0', { openshift: 'v4.17' })]);
    expect(check_dangling_bundles(dangling.bundles[1]!, dangling).map((v) => v.message)).toEqual([
      `Channel candidate-v0 has dangling bundles: {${PKG}/0.0.9}`,
      `Channel stable-v0 has dangling bundles: {${PKG}/0.0.9}`,
    ]);
    const skipOnly = operator([bare('0.0.9'), bare('0.1.0', { skipRange: '>=0.0.0 <0.1.0' })]);
    expect(check_dangling_bundles(skipOnly.bundles[1]!, skipOnly)).toEqual([]);
    const op = operator([ours('0.0.9'), ours('0.1.0')]);
    for (const b of op.bundles) expect(check_dangling_bundles(b, op)).toEqual([]);
    expect(check_replaces_availability(op.bundles[1]!, op)).toEqual([]);
  });

  it('check_olm_bundle_object_in_fbc: embedded objects fail in 4.17+ catalogs, not before', () => {
    const blobs = [
      { schema: 'olm.bundle', name: 'x', properties: [{ type: 'olm.bundle.object', value: {} }] },
    ];
    expect(check_olm_bundle_object_in_fbc([{ catalog: 'v4.17', operator: PKG, blobs }])).toHaveLength(1);
    expect(check_olm_bundle_object_in_fbc([{ catalog: 'v4.16', operator: PKG, blobs }])).toEqual([]);
    const migrated = [
      { schema: 'olm.bundle', name: 'x', properties: [{ type: 'olm.csv.metadata', value: {} }] },
    ];
    expect(check_olm_bundle_object_in_fbc([{ catalog: 'v4.20', operator: PKG, blobs: migrated }])).toEqual(
      [],
    );
  });

  it('check_schema_operator_ci_config: packaging/ci.yaml is valid; reviewers may not be empty', () => {
    expect(check_schema_operator_ci_config(operator([], ciConfig() as Obj))).toEqual([]);
    expect(check_schema_operator_ci_config(operator([], { reviewers: [] }))[0]?.level).toBe('failure');
    expect(
      check_schema_operator_ci_config(operator([], { fbc: { enabled: true, extra: 1 } }))[0]?.level,
    ).toBe('failure');
  });
});

describe('the other checks', () => {
  it('check_required_fields: our CSV has every field; a missing fatal field fails', () => {
    expect(check_required_fields(ours('0.1.0'))).toEqual([]);
    const b = ours('0.1.0');
    const spec = { ...(b.csv.spec as Obj) };
    delete spec.maintainers;
    expect(check_required_fields({ ...b, csv: { ...b.csv, spec } })).toEqual([
      { level: 'failure', message: 'CSV does not define spec.maintainers' },
    ]);
  });

  it('check_network_policy_presence fails a bundle that ships a NetworkPolicy', () => {
    const np = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'x' } };
    const b = { ...ours('0.1.0'), manifests: [{ file: 'np.yaml', content: np }] };
    expect(check_network_policy_presence(b)[0]?.message).toMatch(/NetworkPolicy in np\.yaml/);
    expect(check_network_policy_presence(ours('0.1.0'))).toEqual([]);
  });

  it('check_upgrade_graph_loop and check_ci_upgrade_graph', () => {
    const loop = operator([
      bare('0.0.9', { replaces: `${PKG}.v0.1.0` }),
      bare('0.1.0', { replaces: `${PKG}.v0.0.9` }),
    ]);
    expect(check_upgrade_graph_loop(loop)[0]?.message).toMatch(/Upgrade graph loop detected/);
    expect(check_ci_upgrade_graph(operator([], {}))[0]?.level).toBe('warning');
    expect(check_ci_upgrade_graph(operator([], { updateGraph: 'x' }))[0]?.level).toBe('failure');
  });

  it('check_operator_name and check_operator_version_directory_name', () => {
    const op = operator([ours('0.1.0')]);
    expect(check_operator_name(op.bundles[0]!, op)).toEqual([]);
    expect(check_operator_version_directory_name({ ...ours('0.1.0'), dir: '0.1' }, op)[0]?.level).toBe(
      'failure',
    );
  });

  it('release-config.yaml: the newest version with its channels and edges, valid for the schema', () => {
    const rc = releaseConfig(committedTemplate(), '0.1.0');
    expect(rc).toEqual({
      catalog_templates: [
        {
          template_name: 'basic.yaml',
          channels: ['candidate-v0', 'stable-v0'],
          replaces: `${PKG}.v0.0.9`,
          skipRange: '>=0.0.0 <0.1.0',
        },
      ],
    });
    expect(check_validate_schema_bundle_release_config({ ...ours('0.1.0'), releaseConfig: rc })).toEqual([]);
    expect(
      check_validate_schema_bundle_release_config({ ...ours('0.1.0'), releaseConfig: { x: 1 } }),
    ).not.toEqual([]);
  });

  it('runs FBC-only checks by ci.yaml: skip_fbc checks only without fbc.enabled', () => {
    const repo = (config: Obj): CommunityRepo => ({
      root: '/x',
      config: {},
      operators: [operator([bare('0.0.9'), bare('0.1.0')], config)],
      catalogs: [],
    });
    const none = () => [];
    const bundleOnly = runSuites(repo({ updateGraph: 'replaces-mode' }), { sdk: none });
    expect(bundleOnly.map((r) => r.check)).toContain('check_dangling_bundles');
    expect(bundleOnly.map((r) => r.check)).toContain('check_api_version_constraints');
    const fbc = runSuites(repo({ fbc: { enabled: true } }), { sdk: none });
    expect(fbc.map((r) => r.check)).not.toContain('check_dangling_bundles');
  });
});

describe('operator-sdk --list-optional', () => {
  it('finds every validator whichever line of its row the name= label is on', () => {
    const out = [
      'NAME             LABELS                     DESCRIPTION',
      'categories       suite=operatorframework    OperatorHub.io categories',
      '                 name=categories',
      'multiarch        name=multiarch             (Alpha) Multiple Architectures',
    ].join('\n');
    expect(validatorNames(out)).toEqual(['categories', 'multiarch']);
  });
});

describe('OpenShift selectors', () => {
  it('covers the releases a selector names and takes the newest for the deprecated-API check', () => {
    const names = (s: string) => selectedReleases(s).map((v) => `${v.major}.${v.minor}`);
    expect(names('v4.17')).toEqual(['4.17', '4.18', '4.19', '4.20']);
    expect(names('v4.15-v4.17')).toEqual(['4.15', '4.16', '4.17']);
    expect(names('=v4.17')).toEqual(['4.17']);
    expect(deprecationTestKubeVersion(ours('0.1.0'))).toBe('1.33');
  });

  it('ci.yaml maps the template to every catalog the bundle is offered in', () => {
    const min = (ours('0.1.0').csv.spec as { minKubeVersion: string }).minKubeVersion;
    expect(ciConfig().fbc?.catalog_mapping?.[0]?.catalog_names).toEqual(communityCatalogs(min));
  });

  it('evaluates npm-style ranges like olm.skipRange', () => {
    expect(satisfies('0.0.9', '>=0.0.0 <0.1.0')).toBe(true);
    expect(satisfies('0.1.0', '>=0.0.0 <0.1.0')).toBe(false);
    expect(satisfies('1.2.3', '<1.0.0 || >=1.2.0')).toBe(true);
    expect(compareSemver('1.0.0-rc.1', '1.0.0')).toBeLessThan(0);
  });
});
