/**
 * OpenTelemetry SDK setup for the composition root (src/compose/app.ts / src/main.ts). Everything
 * else uses `@opentelemetry/api` only, which is a no-op until this registers a provider.
 *
 * Why opt-in on the standard variables: tracing costs an exporter, a batch queue and a
 * network peer. Unless the operator points the process at a collector
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or names an exporter
 * (`OTEL_TRACES_EXPORTER=otlp|console|zipkin`), nothing is registered and the decision-span
 * recorder is not even subscribed. All other behaviour (protocol, sampler, batch sizes,
 * resource attributes, `OTEL_SERVICE_NAME`) is the SDK's standard environment handling.
 * Only traces are set up here: metrics are Prometheus (src/telemetry/metrics.ts) and logs
 * are our JSON lines (src/logging/logger.ts).
 */
import { context, diag, DiagLogLevel, propagation, trace } from '@opentelemetry/api';
import type { DiagLogger, Tracer } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../logging/logger.js';

export const TRACER_NAME = 'cacheroute';
export const DEFAULT_SERVICE_NAME = 'cacheroute';

export type Env = Readonly<Record<string, string | undefined>>;

function truthy(v: string | undefined): boolean {
  return v !== undefined && ['true', '1', 'yes', 'on'].includes(v.trim().toLowerCase());
}
function nonEmpty(v: string | undefined): boolean {
  return v !== undefined && v.trim() !== '';
}

/** Why tracing is on or off for this environment (pure; logged at startup). */
export function tracingDecisionFromEnv(env: Env): { enabled: boolean; why: string } {
  if (truthy(env['OTEL_SDK_DISABLED'])) return { enabled: false, why: 'OTEL_SDK_DISABLED' };
  const exporters = (env['OTEL_TRACES_EXPORTER'] ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '' && s !== 'null');
  if (exporters.includes('none')) return { enabled: false, why: 'OTEL_TRACES_EXPORTER=none' };
  if (exporters.length > 0) return { enabled: true, why: `OTEL_TRACES_EXPORTER=${exporters.join(',')}` };
  if (nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'])) return { enabled: true, why: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' };
  if (nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT'])) return { enabled: true, why: 'OTEL_EXPORTER_OTLP_ENDPOINT' };
  return { enabled: false, why: 'no OTLP endpoint or traces exporter configured' };
}

function serviceNameFromEnv(env: Env): string | undefined {
  if (nonEmpty(env['OTEL_SERVICE_NAME'])) return undefined; // SDK reads it itself
  const attrs = env['OTEL_RESOURCE_ATTRIBUTES'] ?? '';
  if (/(^|,)\s*service\.name\s*=/.test(attrs)) return undefined;
  return DEFAULT_SERVICE_NAME;
}

export interface TracingOptions {
  /** Environment to read; default process.env (the SDK itself always reads process.env). */
  env?: Env;
  logger?: Logger;
  /** Test hook: export to these processors instead of the environment's exporter; forces tracing on. */
  spanProcessors?: SpanProcessor[];
}

export interface Tracing {
  readonly enabled: boolean;
  /** Tracer for router spans (a no-op tracer when disabled). */
  readonly tracer: Tracer;
  /** Exports spans still queued (tests, before a bounded wait); no-op when disabled. */
  forceFlush(): Promise<void>;
  /** Flushes pending spans and unregisters the SDK; idempotent. */
  shutdown(): Promise<void>;
}

interface Flushable {
  forceFlush(): Promise<void>;
}
function isFlushable(x: unknown): x is Flushable {
  return typeof (x as Partial<Flushable> | undefined)?.forceFlush === 'function';
}

function diagLoggerFrom(logger: Logger): DiagLogger {
  const fwd = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string) => logger[level]('otel: ' + message, { component: 'otel' });
  return { verbose: fwd('debug'), debug: fwd('debug'), info: fwd('info'), warn: fwd('warn'), error: fwd('error') };
}

export function startTracing(opts: TracingOptions = {}): Tracing {
  const env = opts.env ?? process.env;
  const decision = opts.spanProcessors ? { enabled: true, why: 'span processors given' } : tracingDecisionFromEnv(env);
  if (!decision.enabled) {
    opts.logger?.info('tracing disabled', { reason: decision.why });
    return { enabled: false, tracer: trace.getTracer(TRACER_NAME), forceFlush: async () => {}, shutdown: async () => {} };
  }
  if (opts.logger && !nonEmpty(env['OTEL_LOG_LEVEL'])) {
    diag.setLogger(diagLoggerFrom(opts.logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  }
  const serviceName = serviceNameFromEnv(env);
  const sdk = new NodeSDK({
    ...(serviceName !== undefined ? { serviceName } : {}),
    ...(opts.spanProcessors ? { spanProcessors: opts.spanProcessors } : {}),
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  opts.logger?.info('tracing enabled', {
    reason: decision.why,
    service_name: env['OTEL_SERVICE_NAME'] ?? serviceName ?? null,
    sampler: env['OTEL_TRACES_SAMPLER'] ?? 'parentbased_always_on',
  });
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    tracer: trace.getTracer(TRACER_NAME),
    async forceFlush() {
      if (stopped !== undefined) return;
      // The global provider is a proxy; its delegate is the SDK's TracerProvider.
      const global: unknown = trace.getTracerProvider();
      const delegate: unknown =
        typeof (global as { getDelegate?: unknown }).getDelegate === 'function'
          ? (global as { getDelegate(): unknown }).getDelegate()
          : global;
      if (isFlushable(delegate)) await delegate.forceFlush();
    },
    shutdown() {
      stopped ??= sdk
        .shutdown()
        .catch((err: unknown) => {
          opts.logger?.warn('tracing shutdown failed', { error: err instanceof Error ? err.message : String(err) });
        })
        .finally(() => {
          trace.disable();
          context.disable();
          propagation.disable();
          diag.disable();
        });
      return stopped;
    },
  };
}
