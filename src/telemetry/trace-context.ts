/**
 * W3C trace-context parsing for the decision span's parent.
 *
 * Why our own parser: the edge hands us the raw `traceparent`/`tracestate` strings (from the
 * gRPC metadata of Envoy's ext_proc call). Going through the global propagator would make
 * the parent depend on whichever propagator the process registered (none when tracing is
 * off, B3 if someone set OTEL_PROPAGATORS=b3); the header format itself is fixed, so parse
 * it here with `@opentelemetry/api` types only.
 */
import { ROOT_CONTEXT, createTraceState, isSpanContextValid, trace } from '@opentelemetry/api';
import type { Context, SpanContext } from '@opentelemetry/api';

// version "-" trace-id "-" parent-id "-" flags; future versions may append fields.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** Parses a `traceparent` header value; undefined when absent or malformed. */
export function parseTraceparent(traceparent: string | undefined, tracestate?: string): SpanContext | undefined {
  if (traceparent === undefined) return undefined;
  const m = TRACEPARENT.exec(traceparent.trim().toLowerCase());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff') return undefined; // forbidden version
  if (version === '00' && rest !== undefined) return undefined; // v00 has exactly four fields
  const ctx: SpanContext = {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & 0xff,
    isRemote: true,
    ...(tracestate !== undefined && tracestate.trim() !== '' ? { traceState: createTraceState(tracestate) } : {}),
  };
  return isSpanContextValid(ctx) ? ctx : undefined;
}

/** A context whose active span is the remote parent described by the headers (ROOT when none). */
export function contextFromTraceHeaders(traceparent: string | undefined, tracestate?: string): Context {
  const parent = parseTraceparent(traceparent, tracestate);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}

/** The trace id in a `traceparent`, for log correlation; undefined when absent or malformed. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  return parseTraceparent(traceparent)?.traceId;
}
