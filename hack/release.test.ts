// The release pipeline's pure parts and its workflow file: pins and published bundles written with the
// files' comments kept, a published version never changed, and the workflow running `make release` and
// attaching exactly the assets hack/release.ts writes. The pipeline itself runs end to end against a
// loopback registry in test/integration/packaging/release.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ROOT } from './bundle.ts';
import { STEPS, withPins, withPublished } from './release.ts';

const ref = (c: string) => `r.example/ns/x@sha256:${c.repeat(64)}`;

describe('the release pipeline', () => {
  it('pins the registry, each operator image and the helm runner, keeping the comments', () => {
    const before = readFileSync(join(ROOT, 'packaging/images.yaml'), 'utf8');
    const after = withPins(before, 'r.example/ns', { '0.1.0': ref('a'), '0.2.0': ref('b') }, ref('c'));
    const parsed = YAML.parse(after);
    expect(parsed.registry).toBe('r.example/ns');
    expect(parsed.operator['0.1.0']).toBe(ref('a'));
    expect(parsed.operator['0.2.0']).toBe(ref('b'));
    expect(parsed.operator['0.0.9']).toBe(YAML.parse(before).operator['0.0.9']);
    expect(parsed.helm).toBe(ref('c'));
    expect(after).toContain('# Images the bundles reference, always by digest');
  });

  it('records published bundles and refuses to change one already published', () => {
    const first = withPublished(undefined, { '0.1.0': ref('a') });
    expect(YAML.parse(first)).toEqual({ '0.1.0': ref('a') });
    expect(first).toMatch(/^# Released versions/);
    expect(YAML.parse(withPublished(first, { '0.1.0': ref('a'), '0.2.0': ref('b') }))).toEqual({
      '0.1.0': ref('a'),
      '0.2.0': ref('b'),
    });
    expect(() => withPublished(first, { '0.1.0': ref('d') })).toThrow(
      `packaging/published.yaml: 0.1.0 is already published as ${ref('a')}`,
    );
  });

  it('runs from the forge: the workflow calls make release and attaches what it writes', () => {
    const wf = YAML.parse(readFileSync(join(ROOT, '.github/workflows/release.yaml'), 'utf8')) as {
      on: { workflow_dispatch: { inputs: Record<string, unknown> } };
      jobs: { release: { steps: { run?: string }[] } };
    };
    expect(Object.keys(wf.on.workflow_dispatch.inputs)).toEqual(['version', 'registry']);
    const runs = wf.jobs.release.steps.map((s) => s.run ?? '').join('\n');
    expect(runs).toContain('make release REGISTRY="$REGISTRY" VERSION="$VERSION" OUT=dist');
    for (const asset of ['dist/release.json', 'dist/krew/*', 'dist/vworkspace-operator-$VERSION.tgz'])
      expect(runs).toContain(asset);
    expect(STEPS).toEqual(['pins', 'bundle', 'images', 'validate', 'publish', 'chart', 'krew']);
  });
});
