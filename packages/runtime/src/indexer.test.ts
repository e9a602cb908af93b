import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { Indexer } from './indexer.ts';

const op = (name: string, target: string, sources: string[] = []): KubernetesObject & { spec: object } => ({
  metadata: { name, namespace: 'team' },
  spec: { target, sources },
});
const targetOf = (o: KubernetesObject) => (o as { spec: { target: string } }).spec.target;
const sourcesOf = (o: KubernetesObject) => (o as { spec: { sources: string[] } }).spec.sources;

describe('Indexer', () => {
  it('files one key, then more, under a value, and forgets them as they go or move', () => {
    const ix = new Indexer<KubernetesObject>();
    ix.addIndexer('target', targetOf);
    ix.set('team/a', op('a', 'db'));
    expect(ix.indexKeys('target', 'db')).toEqual(['team/a']);
    ix.set('team/b', op('b', 'db'));
    ix.set('team/c', op('c', 'db'));
    expect(ix.indexKeys('target', 'db').sort()).toEqual(['team/a', 'team/b', 'team/c']);
    ix.delete('team/b');
    ix.set('team/c', op('c', 'web'));
    expect(ix.indexKeys('target', 'db')).toEqual(['team/a']);
    expect(ix.byIndex('target', 'web').map((o) => o.metadata?.name)).toEqual(['c']);
    // A third one after the Set went back to the key alone.
    ix.set('team/d', op('d', 'db'));
    expect(ix.indexKeys('target', 'db').sort()).toEqual(['team/a', 'team/d']);
    ix.delete('team/a');
    ix.delete('team/d');
    expect(ix.indexKeys('target', 'db')).toEqual([]);
    expect(ix.byIndex('target', 'db')).toEqual([]);
  });

  it('an object naming one value twice is filed once and forgotten once', () => {
    const ix = new Indexer<KubernetesObject>();
    ix.addIndexer('sources', sourcesOf);
    ix.set('team/a', op('a', 'db', ['x', 'x']));
    expect(ix.indexKeys('sources', 'x')).toEqual(['team/a']);
    ix.set('team/b', op('b', 'db', ['x']));
    expect(ix.indexKeys('sources', 'x').sort()).toEqual(['team/a', 'team/b']);
    ix.set('team/a', op('a', 'db', []));
    expect(ix.indexKeys('sources', 'x')).toEqual(['team/b']);
    ix.delete('team/b');
    expect(ix.indexKeys('sources', 'x')).toEqual([]);
  });

  it('an index added late and a relist file what is stored', () => {
    const ix = new Indexer<KubernetesObject>();
    ix.set('team/a', op('a', 'db'));
    ix.addIndexer('target', targetOf);
    expect(ix.indexKeys('target', 'db')).toEqual(['team/a']);
    ix.replace(
      new Map([
        ['team/b', op('b', 'db')],
        ['team/c', op('c', 'db')],
      ]),
    );
    expect(ix.indexKeys('target', 'db').sort()).toEqual(['team/b', 'team/c']);
    expect(ix.indexKeys('namespace', 'team').sort()).toEqual(['team/b', 'team/c']);
  });
});
