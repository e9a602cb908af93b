// The mirror plan: references parsed like a container runtime does, every catalog image mapped to the
// mirror by digest, and the IDMS/ICSP rules covering every source repository.
import { describe, expect, it } from 'vitest';
import {
  catalogImages,
  imageContentSourcePolicy,
  imageDigestMirrorSet,
  mappingText,
  mirrorPlan,
  parseRef,
  redirect,
} from './mirror.ts';

const D1 = `sha256:${'1'.repeat(64)}`;
const D2 = `sha256:${'2'.repeat(64)}`;
const D3 = `sha256:${'3'.repeat(64)}`;

describe('parseRef', () => {
  it.each([
    [`quay.io/vworkspace/op@${D1}`, { registry: 'quay.io', repository: 'vworkspace/op', digest: D1 }],
    ['127.0.0.1:5000/a/b:v1', { registry: '127.0.0.1:5000', repository: 'a/b', tag: 'v1' }],
    ['localhost/x', { registry: 'localhost', repository: 'x' }],
    ['alpine', { registry: 'docker.io', repository: 'library/alpine' }],
    [`alpine/helm@${D2}`, { registry: 'docker.io', repository: 'alpine/helm', digest: D2 }],
    [
      `docker.io/alpine/helm:3.19.0@${D2}`,
      { registry: 'docker.io', repository: 'alpine/helm', tag: '3.19.0', digest: D2 },
    ],
  ])('%s', (ref, want) => {
    expect(parseRef(ref)).toEqual(want);
  });

  it('refuses what is not a reference', () => {
    expect(() => parseRef('quay.io/Upper/x')).toThrow(/not a repository name/);
    expect(() => parseRef('quay.io/x@sha256:abc')).toThrow(/not a sha256 digest/);
  });
});

describe('catalogImages', () => {
  it('collects bundle images and related images once, ignoring empty ones and other blobs', () => {
    expect(
      catalogImages([
        { schema: 'olm.package', name: 'p' },
        {
          schema: 'olm.bundle',
          image: `r/b@${D1}`,
          relatedImages: [{ image: `r/op@${D2}` }, { name: 'helm', image: `docker.io/alpine/helm@${D3}` }],
        },
        { schema: 'olm.bundle', image: '', relatedImages: [{ image: `r/op@${D2}` }] },
      ]),
    ).toEqual([`docker.io/alpine/helm@${D3}`, `r/b@${D1}`, `r/op@${D2}`]);
  });
});

describe('mirrorPlan', () => {
  const images = [
    `quay.io/vws/op@${D1}`,
    `quay.io/vws/bundle@${D2}`,
    `quay.io/vws/bundle@${D3}`,
    `docker.io/alpine/helm@${D3}`,
  ];

  it('maps each image to the same digest under the mirror, keeping the repository path', () => {
    const plan = mirrorPlan(images, 'mirror.example.com:5000/olm/');
    expect(plan.entries).toContainEqual({
      source: `docker.io/alpine/helm@${D3}`,
      target: `mirror.example.com:5000/olm/alpine/helm@${D3}`,
    });
    expect(plan.entries).toHaveLength(4);
    expect(plan.repositories).toEqual([
      { source: 'docker.io/alpine/helm', mirror: 'mirror.example.com:5000/olm/alpine/helm' },
      { source: 'quay.io/vws/bundle', mirror: 'mirror.example.com:5000/olm/vws/bundle' },
      { source: 'quay.io/vws/op', mirror: 'mirror.example.com:5000/olm/vws/op' },
    ]);
    for (const i of images)
      expect(redirect(i, plan.repositories)).toBe(i.replace(/^[^/]+/, 'mirror.example.com:5000/olm'));
    expect(mappingText(plan).split('\n')).toContain(
      `quay.io/vws/op@${D1}=mirror.example.com:5000/olm/vws/op@${D1}`,
    );
  });

  it('refuses images by tag and two sources that would share a mirror repository', () => {
    expect(() => mirrorPlan(['quay.io/vws/op:v1'], 'm')).toThrow(
      /not referenced by digest.*quay.io\/vws\/op:v1/,
    );
    expect(() => mirrorPlan([`quay.io/a/x@${D1}`, `docker.io/a/x@${D2}`], 'm')).toThrow(
      /both be mirrored to m\/a\/x/,
    );
  });

  it('writes IDMS and ICSP with one rule per source repository', () => {
    const plan = mirrorPlan(images, 'm.example/olm');
    const idms = imageDigestMirrorSet(plan, 'vws') as { spec: { imageDigestMirrors: unknown[] } };
    const icsp = imageContentSourcePolicy(plan, 'vws') as { spec: { repositoryDigestMirrors: unknown[] } };
    expect(idms).toMatchObject({ apiVersion: 'config.openshift.io/v1', kind: 'ImageDigestMirrorSet' });
    expect(icsp).toMatchObject({
      apiVersion: 'operator.openshift.io/v1alpha1',
      kind: 'ImageContentSourcePolicy',
    });
    expect(idms.spec.imageDigestMirrors).toEqual(icsp.spec.repositoryDigestMirrors);
    expect(idms.spec.imageDigestMirrors).toContainEqual({
      source: 'quay.io/vws/op',
      mirrors: ['m.example/olm/vws/op'],
    });
    expect(idms.spec.imageDigestMirrors).toHaveLength(3);
  });
});
