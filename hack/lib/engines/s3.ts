// A very small S3 client for the tests and installers: AWS Signature Version 4 (header form, path-style
// addressing) over fetch, enough to create a bucket and list its keys on the engines' object store
// without an SDK. signV4 is pure and checked against AWS's published examples (s3.test.ts).
import { createHash, createHmac } from 'node:crypto';

export interface S3Credentials {
  accessKey: string;
  secretKey: string;
  region: string;
}

export interface S3Request {
  method: string;
  /** Absolute URL of the endpoint, e.g. http://10.96.12.34:9000 (path-style: the bucket is in `path`). */
  endpoint: string;
  /** `/bucket` or `/bucket/key` (unencoded). */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
}

const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** RFC 3986 percent-encoding, as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
export function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `/a b/c` → `/a%20b/c`: each segment encoded once (S3 does not double-encode the path). */
export function encodePath(path: string): string {
  return path
    .split('/')
    .map((seg) => uriEncode(seg))
    .join('/');
}

export function canonicalQuery(query: Record<string, string> = {}): string {
  return Object.entries(query)
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/**
 * The headers that sign `req` at `now` (SigV4, service s3): x-amz-date, x-amz-content-sha256 and
 * Authorization, plus the given headers; `host` is signed but left for fetch to send. Pure.
 */
export function signV4(req: S3Request, creds: S3Credentials, now: Date): Record<string, string> {
  const url = new URL(req.endpoint);
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const payloadHash = req.headers?.['x-amz-content-sha256'] ?? sha256Hex(req.body ?? '');
  const headers: Record<string, string> = {
    ...Object.fromEntries(Object.entries(req.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v.trim()])),
    host: url.host,
    'x-amz-content-sha256': payloadHash,
    'x-amz-date': amzDate,
  };
  const names = Object.keys(headers).sort();
  const canonicalRequest = [
    req.method,
    encodePath(req.path),
    canonicalQuery(req.query),
    ...names.map((n) => `${n}:${headers[n]}`),
    '',
    names.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${day}/${creds.region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretKey}`, day), creds.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
  const { host: _host, ...sent } = headers;
  return {
    ...sent,
    authorization: `AWS4-HMAC-SHA256 Credential=${creds.accessKey}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
  };
}

export class S3Error extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Sends a signed request; non-2xx becomes an S3Error with S3's error code (never the credentials). */
export async function s3(req: S3Request, creds: S3Credentials): Promise<string> {
  const qs = canonicalQuery(req.query);
  const url = `${req.endpoint.replace(/\/$/, '')}${encodePath(req.path)}${qs ? `?${qs}` : ''}`;
  const res = await fetch(url, {
    method: req.method,
    headers: signV4(req, creds, new Date()),
    ...(req.body !== undefined ? { body: req.body } : {}),
  });
  const text = await res.text();
  if (!res.ok) {
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? String(res.status);
    const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? text.slice(0, 200);
    throw new S3Error(res.status, code, `S3 ${req.method} ${req.path}: ${res.status} ${code}: ${message}`);
  }
  return text;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
export function xmlText(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => XML_ENTITIES[e] ?? '');
}

/** The keys and continuation token of one ListObjectsV2 page. Pure. */
export function parseListPage(xml: string): { keys: string[]; next?: string } {
  const keys = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => xmlText(m[1] ?? ''));
  const truncated = /<IsTruncated>true<\/IsTruncated>/.test(xml);
  const next = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1];
  return truncated && next ? { keys, next: xmlText(next) } : { keys };
}

/** Every key in `bucket` under `prefix` (ListObjectsV2, all pages), sorted. */
export async function listKeys(
  endpoint: string,
  creds: S3Credentials,
  bucket: string,
  prefix = '',
): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const query: Record<string, string> = { 'list-type': '2', prefix };
    if (token) query['continuation-token'] = token;
    const page = parseListPage(await s3({ method: 'GET', endpoint, path: `/${bucket}`, query }, creds));
    keys.push(...page.keys);
    token = page.next;
  } while (token);
  return keys.sort();
}

/** Creates `bucket`; one that this account already owns is fine. */
export async function createBucket(endpoint: string, creds: S3Credentials, bucket: string): Promise<void> {
  try {
    await s3({ method: 'PUT', endpoint, path: `/${bucket}` }, creds);
  } catch (err) {
    if (err instanceof S3Error && err.code === 'BucketAlreadyOwnedByYou') return;
    throw err;
  }
}
