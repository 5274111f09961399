import { expect } from 'chai';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTracing, tracingDecisionFromEnv } from '../../../src/telemetry/tracing.js';
import { createDecisionSpanRecorder } from '../../../src/telemetry/decision-span.js';
import { createLogger } from '../../../src/logging/logger.js';
import { sampleDecision as decision, secretRequest as request } from '../builders.js';

describe('tracing', () => {
  describe('tracingDecisionFromEnv', () => {
    const cases: [Record<string, string>, boolean][] = [
      [{}, false],
      [{ OTEL_SERVICE_NAME: 'x' }, false],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, true],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }, true],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: '   ' }, false],
      [{ OTEL_TRACES_EXPORTER: 'console' }, true],
      [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318' }, false],
      [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318' }, false],
      [{ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318' }, true],
    ];
    for (const [env, enabled] of cases) {
      it(`${JSON.stringify(env)} → ${enabled ? 'on' : 'off'}`, () => {
        expect(tracingDecisionFromEnv(env).enabled).to.equal(enabled);
      });
    }
  });

  it('is off without configuration: nothing registered, spans are no-ops', async () => {
    const lines: string[] = [];
    const t = startTracing({ env: {}, logger: createLogger({ level: 'info', write: (l) => void lines.push(l) }) });
    expect(t.enabled).to.equal(false);
    const span = t.tracer.startSpan('x');
    expect(span.isRecording()).to.equal(false);
    span.end();
    await t.shutdown();
    expect(lines.join('')).to.include('tracing disabled');
  });

  it('registers the SDK globally when on, exports decision spans, and unregisters on shutdown', async () => {
    const exporter = new InMemorySpanExporter();
    const t = startTracing({ env: {}, spanProcessors: [new SimpleSpanProcessor(exporter)] });
    try {
      expect(t.enabled).to.equal(true);
      // Any tracer from the global API now records (the core only uses @opentelemetry/api).
      createDecisionSpanRecorder({ tracer: trace.getTracer('cacheroute') }).record(
        request({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
        decision(),
      );
      await t.forceFlush(); // export waits for async resource detection
      const spans = exporter.getFinishedSpans();
      expect(spans.map((s) => s.name)).to.deep.equal(['cacheroute.route']);
      expect(spans[0]!.resource.attributes['service.name']).to.equal('cacheroute');
    } finally {
      await t.shutdown();
      await t.shutdown(); // idempotent
    }
    const after = trace.getTracer('cacheroute').startSpan('after');
    expect(after.isRecording()).to.equal(false);
    after.end();
  });
});
