/**
 * Structured JSON logs, one object per line on stderr, with levels. Callers pass fields,
 * never prompt text. Lines about a request carry `request_id` (and `trace_id` when known):
 * use `logger.child({ request_id, trace_id })`.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

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
  /** Where lines go; default process.stderr. */
  write?: (line: string) => void;
  /** Wall-clock source for the `ts` field; default Date.now. */
  now?: () => number;
}

export function createLogger(opts: LoggerOptions, base: LogFields = {}): Logger {
  const min = ORDER[opts.level];
  const write = opts.write ?? ((line: string) => void process.stderr.write(line));
  const now = opts.now ?? Date.now;
  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (ORDER[level] < min) return;
    const rec: Record<string, unknown> = { ts: new Date(now()).toISOString(), level, msg, ...base };
    if (fields) for (const [k, v] of Object.entries(fields)) if (v !== undefined) rec[k] = v;
    write(JSON.stringify(rec) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(opts, { ...base, ...fields }),
    enabled: (level) => ORDER[level] >= min,
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });

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
