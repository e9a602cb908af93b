import { describe, expect, it } from 'vitest';
import { canonicalQuery, encodePath, parseListPage, signV4 } from './s3.ts';

// AWS's worked examples for SigV4 with the Authorization header ("Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk", Amazon S3 API reference).
const creds = {
  accessKey: 'AKIAIOSFODNN7EXAMPLE',
  secretKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  region: 'us-east-1',
};
const endpoint = 'https://examplebucket.s3.amazonaws.com';
const now = new Date('2013-05-24T00:00:00Z');
const signature = (h: Record<string, string>) => /Signature=([0-9a-f]+)$/.exec(h.authorization ?? '')?.[1];

describe('SigV4 (AWS examples)', () => {
  it('GET Object with a Range header', () => {
    const h = signV4(
      { method: 'GET', endpoint, path: '/test.txt', headers: { Range: 'bytes=0-9' } },
      creds,
      now,
    );
    expect(h['x-amz-date']).toBe('20130524T000000Z');
    expect(h['x-amz-content-sha256']).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    expect(h.authorization).toContain(
      'Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,',
    );
    expect(signature(h)).toBe('f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  });

  it('PUT Object with a body and an encoded key', () => {
    const h = signV4(
      {
        method: 'PUT',
        endpoint,
        path: '/test$file.text',
        headers: { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
        body: 'Welcome to Amazon S3.',
      },
      creds,
      now,
    );
    expect(signature(h)).toBe('98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd');
  });

  it('GET Bucket lifecycle (a query key without a value)', () => {
    const h = signV4({ method: 'GET', endpoint, path: '/', query: { lifecycle: '' } }, creds, now);
    expect(signature(h)).toBe('fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543');
  });

  it('GET Bucket (list objects) with sorted query parameters', () => {
    const h = signV4(
      { method: 'GET', endpoint, path: '/', query: { prefix: 'J', 'max-keys': '2' } },
      creds,
      now,
    );
    expect(signature(h)).toBe('34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7');
  });

  it('never sends the secret key', () => {
    const h = signV4({ method: 'GET', endpoint, path: '/' }, creds, now);
    expect(JSON.stringify(h)).not.toContain(creds.secretKey);
    expect(h.host).toBeUndefined();
  });
});

describe('S3 helpers', () => {
  it('encodes path segments and query values the RFC 3986 way', () => {
    expect(encodePath('/b/a b/(x)*')).toBe('/b/a%20b/%28x%29%2A');
    expect(canonicalQuery({ 'list-type': '2', prefix: 'backups/a b', a: '' })).toBe(
      'a=&list-type=2&prefix=backups%2Fa%20b',
    );
  });

  it('parses a ListObjectsV2 page: keys unescaped, the token only when truncated', () => {
    const xml = `<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b</Key></Contents><Contents><Key>c</Key></Contents><NextContinuationToken>t&lt;1</NextContinuationToken></ListBucketResult>`;
    expect(parseListPage(xml)).toEqual({ keys: ['a&b', 'c'], next: 't<1' });
    expect(parseListPage('<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>')).toEqual({
      keys: [],
    });
  });
});
