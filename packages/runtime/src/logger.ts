// pino JSON logs. Every line about an object carries its key (`namespace/name`) and the controller
// name, like controller-runtime's structured logs; secret material is redacted by path.

import { type DestinationStream, type Logger, pino } from 'pino';
import { splitKey } from './keys.ts';

export type { Logger } from 'pino';

/**
 * Paths whose values never reach a log line: Secret payloads, tokens, passwords, auth headers.
 * pino's `*` matches one level, so the common nestings (`obj.data`, `obj.secret.data`) are listed.
 */
export const REDACT_PATHS: readonly string[] = [
  'data',
  'stringData',
  'token',
  'password',
  'authorization',
  'bearerToken',
  'clientKey',
  '*.data',
  '*.stringData',
  '*.token',
  '*.password',
  '*.authorization',
  '*.Authorization',
  '*.bearerToken',
  '*.clientKey',
  '*.*.data',
  '*.*.stringData',
  '*.*.token',
  '*.*.password',
  '*.*.authorization',
  '*.*.Authorization',
];

export interface LoggerOptions {
  level?: string;
  name?: string;
  /** Where lines go (default stdout). Tests pass a stream to read them back. */
  destination?: DestinationStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      name: opts.name ?? 'vworkspace-operator',
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: [...REDACT_PATHS], censor: '[REDACTED]' },
      // ISO timestamps and a string level read better in `kubectl logs` than epoch ms and numbers.
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      base: undefined,
    },
    opts.destination,
  );
}

/** A logger that discards everything (tests, defaults). */
export const silentLogger: Logger = pino({ level: 'silent' });

/** Child logger for one controller. */
export function controllerLogger(base: Logger, controller: string): Logger {
  return base.child({ controller });
}

/**
 * Child logger for one object: every line carries `key`, `namespace`, `name` and the controller.
 *
 * The child is made on first use: a controller makes one per reconcile and most reconciles log nothing,
 * while pino serialises and redacts a child's bindings when it is made (in a burst of Operations that was
 * a visible share of the operator's CPU; docs/performance.md).
 */
export function objectLogger(
  base: Logger,
  controller: string,
  key: string,
  extra: Record<string, unknown> = {},
): Logger {
  let child: Logger | undefined;
  const real = (): Logger => {
    if (!child) {
      const { namespace, name } = splitKey(key);
      child = base.child({ controller, key, ...(namespace ? { namespace } : {}), name, ...extra });
    }
    return child;
  };
  return new Proxy({} as Logger, {
    get(_, prop) {
      const target = real();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    set(_, prop, value) {
      return Reflect.set(real(), prop, value);
    },
    has(_, prop) {
      return Reflect.has(real(), prop);
    },
  });
}
