// The reconciler contract, controller-runtime's pkg/reconcile: a reconciler is told WHICH object to look
// at (never what changed), reads current state, makes the world match, and answers with a Result or an
// error. The controller (controller.ts) maps the answer onto its work queue:
// - `{}` or `{ requeueAfter: 0 }`: done, the key's backoff is forgotten;
// - `{ requeueAfter: ms }`: done for now, run again after `ms` (backoff forgotten);
// - a thrown error: run again with the rate limiter's backoff, counted in
//   controller_runtime_reconcile_errors_total;
// - a thrown TerminalError: what retrying cannot fix; logged, counted in
//   controller_runtime_terminal_reconcile_errors_total, and NOT requeued (an event on the object or a
//   watched one brings the key back).

import { statusCode } from './kube-client.ts';
import type { Logger } from './logger.ts';

export interface Request {
  readonly namespace?: string;
  readonly name: string;
}

export interface Result {
  /** Run again after this many milliseconds; absent or 0: done (backoff forgotten). */
  readonly requeueAfter?: number;
}

export interface ReconcileContext {
  key: string;
  namespace?: string;
  name: string;
  /** Logger with controller, key, namespace, name and reconcileID on every line. */
  log: Logger;
  reconcileID: string;
  /** How many times this key has been retried with backoff since its last success. */
  retries: number;
  /** Aborts when the controller must stop at once (shutdown grace period over, leadership lost). */
  signal: AbortSignal;
  /**
   * When (clock ms) the controller's workers started in its current run: a new leadership term starts
   * a new run, so this tells a reconciler what came due while this replica was not reconciling.
   */
  workersStartedAt: number;
}

export interface Reconciler {
  reconcile(req: Request, ctx: ReconcileContext): Promise<Result>;
}

/** What retrying cannot fix: logged and counted, the key is not requeued (reconcile.TerminalError). */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminal(err: unknown): err is TerminalError {
  return err instanceof TerminalError;
}

/** An API answer that retrying the same request cannot change. */
export interface ApiRefusal {
  readonly code: number;
  readonly message: string;
}

const REFUSALS = new Set([400, 403, 404, 422]);

/**
 * The one classification of API refusals: 400 Bad Request, 403 Forbidden (webhook denials included),
 * 404 Not Found (on a create: the namespace is going), 422 Invalid. Anything else (409, 429, 5xx, a
 * failed webhook call, the network) is worth retrying and gives undefined. The message is the API
 * server's (a webhook denial names the field); it never holds Secret data.
 */
export function refusalOf(err: unknown): ApiRefusal | undefined {
  const code = statusCode(err);
  if (code === undefined || !REFUSALS.has(code)) return undefined;
  return { code, message: err instanceof Error ? err.message : String(err) };
}

/** 400 or 422: the object itself is wrong (schema, validation), not who sent it. */
export function isInvalid(err: unknown): boolean {
  const code = statusCode(err);
  return code === 400 || code === 422;
}
