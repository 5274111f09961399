/**
 * Structured logs through pino: one JSON object per line (stderr by default) with `ts`,
 * `level`, `msg` and the caller's fields. Every layer logs through the small `Logger`
 * interface below, so nothing but this file knows pino.
 *
 * Privacy: callers pass ids, labels and numbers, never prompt text. As a second line of
 * defence, fields whose names carry request content (`prompt`, `prefix`, `messages`,
 * `body`, `content`, and the same one level down) are censored by pino's redaction, so a
 * careless `logger.info('x', { prompt })` cannot leak it.
 * Lines about a request carry `request_id` (and `trace_id` when known): use
 * `requestLogger(logger, request)`.
 */
import { destination as pinoDestination, pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type LogFields = Record<string, string | number | boolean | undefined | null>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  enabled(level: LogLevel): boolean;
}

export interface LoggerOptions {
  level: LogLevel;
  /** Where lines go (each ends in a newline); default process.stderr. */
  write?: (line: string) => void;
  /** Wall-clock source for the `ts` field; default Date.now. */
  now?: () => number;
}

/** Field names that carry request content; censored wherever they appear (top level or one below). */
const CONTENT_FIELDS = ['prompt', 'prefix', 'messages', 'body', 'content'];
export const REDACTED = '[redacted]';

export function createLogger(opts: LoggerOptions, base: LogFields = {}): Logger {
  const now = opts.now ?? Date.now;
  const write = opts.write;
  const destination: DestinationStream =
    write !== undefined ? { write: (line: string) => write(line) } : pinoDestination({ fd: 2, sync: true });
  const p = pino(
    {
      level: opts.level,
      base: null,
      messageKey: 'msg',
      timestamp: () => `,"ts":"${new Date(now()).toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: [...CONTENT_FIELDS, ...CONTENT_FIELDS.map((f) => `*.${f}`)], censor: REDACTED },
    },
    destination,
  );
  return wrap(Object.keys(base).length > 0 ? p.child(clean(base)) : p);
}

function clean(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
  return out;
}

function wrap(p: PinoLogger): Logger {
  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (!p.isLevelEnabled(level)) return;
    if (fields === undefined) p[level](msg);
    else p[level](clean(fields), msg);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => wrap(p.child(clean(fields))),
    enabled: (level) => p.isLevelEnabled(level),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
  enabled: () => false,
};

/** The correlation fields every log line about a request carries: `request_id`, `trace_id`. */
export function requestLogFields(request: { readonly requestId: string; readonly traceparent?: string }): LogFields {
  const m = request.traceparent !== undefined ? /^[0-9a-f]{2}-([0-9a-f]{32})-/i.exec(request.traceparent.trim()) : null;
  const traceId = m?.[1]?.toLowerCase();
  return traceId !== undefined && !/^0+$/.test(traceId)
    ? { request_id: request.requestId, trace_id: traceId }
    : { request_id: request.requestId };
}

/** A child logger for lines about one request (adds `request_id` and, when known, `trace_id`). */
export function requestLogger(logger: Logger, request: { readonly requestId: string; readonly traceparent?: string }): Logger {
  return logger.child(requestLogFields(request));
}
