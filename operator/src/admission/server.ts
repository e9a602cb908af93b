// The AdmissionReview HTTPS server (port 9443). Serves every replica, leader or not.
//
// Certificates are read from files (OLM mounts them at /tmp/k8s-webhook-server/serving-certs/
// tls.{crt,key}) and re-read when they change: OLM rotates them by replacing the Secret, which the
// kubelet swaps in through a symlink, so the files are polled by content rather than watched
// with inotify (which misses symlink swaps). A new pair is only taken when it loads; a half-written
// pair keeps the old one in use.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { AdmissionRequest, AdmissionResponse, AdmissionReview } from './review.ts';
import { deny } from './review.ts';

export const DEFAULT_CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';
/**
 * The largest AdmissionReview accepted. The API server stores objects of at most 1.5 MiB (etcd's request
 * limit) and an UPDATE review carries two of them (object and oldObject) plus the request's own fields.
 */
export const MAX_ADMISSION_BODY_BYTES = 4 * 1024 * 1024;

/** How long an idle connection is kept: past the API server's own 90 s idle timeout (see the server). */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

export type AdmissionHandler = (request: AdmissionRequest) => Promise<AdmissionResponse> | AdmissionResponse;

export interface WebhookLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WebhookServerOptions {
  port: number;
  host?: string;
  certDir?: string;
  /** path (e.g. /validate-operation) → handler */
  handlers: Record<string, AdmissionHandler>;
  log: WebhookLog;
  /** How often the certificate files are checked for rotation. */
  certPollMs?: number;
  /** Called once per request: webhook path, HTTP code, seconds spent. */
  observe?: (path: string, code: number, seconds: number) => void;
}

export interface WebhookServer {
  port: number;
  /** Re-reads the certificate pair now; resolves true when a new pair was loaded. */
  reloadCertificates(): Promise<boolean>;
  close(): Promise<void>;
}

async function readPair(dir: string): Promise<{ cert: Buffer; key: Buffer; digest: string }> {
  const [cert, key] = await Promise.all([readFile(join(dir, 'tls.crt')), readFile(join(dir, 'tls.key'))]);
  return { cert, key, digest: createHash('sha256').update(cert).update(key).digest('hex') };
}

/** The body exceeded MAX_ADMISSION_BODY_BYTES (answered with 413, never a connection reset). */
class BodyTooLarge extends Error {}

/** What a 413 says: the limit, and that the sender is not the API server (which never sends this much). */
const tooLargeMessage = () =>
  `AdmissionReview body larger than ${MAX_ADMISSION_BODY_BYTES} bytes refused; the API server never sends one this large (objects are limited to 1.5 MiB), so check what is calling the webhook`;

/** How much of a refused body is read and discarded before the 413, so the sender can read it (see readBody). */
const MAX_DISCARDED_BYTES = 64 * 1024 * 1024;
const MAX_DISCARD_MS = 10_000;

/**
 * The request body, or BodyTooLarge once it passes the limit (by Content-Length up front, else while
 * reading). A refused body is not buffered but read to its end and discarded before the 413 goes out
 * (at most MAX_DISCARDED_BYTES or MAX_DISCARD_MS, as Go's server discards a bounded rest): closing while
 * the sender still writes makes its kernel see a reset (EPIPE/ECONNRESET) instead of the 413.
 */
function readBody(req: import('node:http').IncomingMessage): Promise<Buffer> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    const refuse = () => {
      if (refused) return;
      refused = true;
      chunks.length = 0;
      const timer = setTimeout(() => fail(new BodyTooLarge()), MAX_DISCARD_MS);
      timer.unref();
      req.once('end', () => {
        clearTimeout(timer);
        fail(new BodyTooLarge());
      });
    };
    if (Number(req.headers['content-length'] ?? 0) > MAX_ADMISSION_BODY_BYTES) {
      if (Number(req.headers['content-length']) > MAX_DISCARDED_BYTES) {
        fail(new BodyTooLarge());
        return;
      }
      refuse();
    }
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (refused) {
        if (size > MAX_DISCARDED_BYTES) fail(new BodyTooLarge());
        return;
      }
      if (size > MAX_ADMISSION_BODY_BYTES) {
        refuse();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!refused) ok(Buffer.concat(chunks));
    });
    req.on('error', fail);
  });
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const certDir = opts.certDir ?? DEFAULT_CERT_DIR;
  let pair = await readPair(certDir).catch((err: unknown) => {
    throw new Error(
      `webhook certificate not readable in ${certDir} (tls.crt, tls.key): ${err instanceof Error ? err.message : String(err)}`,
    );
  });

  const server: Server = createServer(
    { cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' },
    (req, res) => {
      const started = process.hrtime.bigint();
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const reply = (code: number, body: unknown) => {
        const payload = Buffer.from(JSON.stringify(body));
        res.writeHead(code, {
          'content-type': 'application/json',
          // A known length: headers and body leave in one write, without chunked framing.
          'content-length': payload.length,
          // A refused body may still be arriving: this connection is not reused.
          ...(code === 413 ? { connection: 'close' } : {}),
        });
        res.end(payload);
        opts.observe?.(path, code, Number(process.hrtime.bigint() - started) / 1e9);
      };
      const handler = opts.handlers[path];
      if (req.method !== 'POST' || !handler) {
        reply(404, { error: `no admission webhook at ${req.method} ${path}` });
        return;
      }
      void (async () => {
        let review: AdmissionReview;
        try {
          review = JSON.parse((await readBody(req)).toString('utf8')) as AdmissionReview;
        } catch (err) {
          if (err instanceof BodyTooLarge) {
            opts.log.warn({ path, limit: MAX_ADMISSION_BODY_BYTES }, 'admission request body too large');
            reply(413, { error: tooLargeMessage() });
            return;
          }
          reply(400, {
            error: `invalid AdmissionReview: ${err instanceof Error ? err.message : String(err)}`,
          });
          return;
        }
        const request = review.request;
        if (review.kind !== 'AdmissionReview' || !request?.uid) {
          reply(400, { error: 'expected an admission.k8s.io/v1 AdmissionReview with request.uid' });
          return;
        }
        let response: AdmissionResponse;
        try {
          response = await handler(request);
        } catch (err) {
          // Never let a bug admit an object silently: deny with a message an SRE can act on.
          opts.log.error({ err, path, uid: request.uid }, 'admission handler failed');
          response = deny(
            request.uid,
            [
              {
                field: '',
                message: 'internal error in the vworkspace admission webhook; see the operator logs',
              },
            ],
            500,
            'InternalError',
          );
        }
        reply(200, {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { ...response, uid: request.uid },
        });
      })();
    },
  );

  // Idle connections stay open longer than the API server keeps them (its webhook client drops an idle
  // connection after 90 s, Go's default). With Node's default of 5 s the server closed connections the
  // API server was just reusing, and that request failed ("write: broken pipe", a 500 for the user under
  // failurePolicy Fail; Go retries no POST): seen in the bench's 2,000-Operation burst. Go's own servers
  // (controller-runtime's webhook server) never close an idle connection first either.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // Node requires the headers timeout to exceed the keep-alive timeout.
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;

  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => ok());
  });

  const reloadCertificates = async (): Promise<boolean> => {
    let next: typeof pair;
    try {
      next = await readPair(certDir);
    } catch (err) {
      opts.log.warn({ err: String(err), certDir }, 'webhook certificate unreadable; keeping the current one');
      return false;
    }
    if (next.digest === pair.digest) return false;
    try {
      server.setSecureContext({ cert: next.cert, key: next.key });
    } catch (err) {
      // e.g. key and certificate of different pairs mid-rotation: try again on the next poll
      opts.log.warn(
        { err: String(err), certDir },
        'webhook certificate pair not usable yet; keeping the current one',
      );
      return false;
    }
    pair = next;
    opts.log.info({ certDir }, 'webhook certificate reloaded');
    return true;
  };
  const timer = setInterval(() => void reloadCertificates(), opts.certPollMs ?? 10_000);
  timer.unref();

  return {
    port: (server.address() as AddressInfo).port,
    reloadCertificates,
    close: () =>
      new Promise<void>((ok) => {
        clearInterval(timer);
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}
