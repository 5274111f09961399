import { expect } from 'chai';
import fc from 'fast-check';
import { SpanKind } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, AlwaysOffSampler } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  ATTR,
  DECISION_SPAN_NAME,
  createDecisionSpanRecorder,
  decisionSpanAttributes,
  selectSpanCandidates,
} from '../../../src/telemetry/decision-span.js';
import { IDLE_LOAD } from '../../../src/endpoints/load.js';
import type { LoadSnapshot } from '../../../src/endpoints/load.js';
import type { CandidateScore } from '../../../src/core/types.js';
import {
  SECRET_PROMPT,
  scoredCandidate as candidate,
  sampleDecision as decision,
  loopbackEndpoint as endpoint,
  secretRequest as request,
} from '../builders.js';

const TID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SID = '00f067aa0ba902b7';

function setup(opts: { sampled?: boolean } = {}) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    ...(opts.sampled === false ? { sampler: new AlwaysOffSampler() } : {}),
  });
  return { exporter, tracer: provider.getTracer('test') };
}

function onlySpan(exporter: InMemorySpanExporter): ReadableSpan {
  const spans = exporter.getFinishedSpans();
  expect(spans).to.have.length(1);
  return spans[0]!;
}

describe('decision-span', () => {
  it('emits one cacheroute.route span as a child of the ext_proc span from traceparent', () => {
    const { exporter, tracer } = setup();
    const rec = createDecisionSpanRecorder({ tracer, nowEpochMs: () => 1_700_000_000_000 });
    rec.record(request({ traceparent: `00-${TID}-${SID}-01` }), decision({ decisionMicros: 250 }));
    const span = onlySpan(exporter);
    expect(span.name).to.equal(DECISION_SPAN_NAME);
    expect(span.kind).to.equal(SpanKind.INTERNAL);
    expect(span.spanContext().traceId).to.equal(TID);
    expect(span.parentSpanContext?.spanId).to.equal(SID);
    expect(span.parentSpanContext?.isRemote).to.equal(true);
    // Duration equals the measured decision time: 250 µs.
    const durNs = span.duration[0] * 1e9 + span.duration[1];
    expect(durNs).to.be.closeTo(250_000, 2_000);
  });

  it('starts a new trace when the request has no (valid) traceparent', () => {
    const { exporter, tracer } = setup();
    createDecisionSpanRecorder({ tracer }).record(request({ traceparent: 'nonsense' }), decision());
    const span = onlySpan(exporter);
    expect(span.parentSpanContext).to.equal(undefined);
    expect(span.spanContext().traceId).to.not.equal(TID);
  });

  it('records strategy, endpoint, fallbacks, match, notes, timing and per-candidate scores', () => {
    const { exporter, tracer } = setup();
    const loads = new Map<string, LoadSnapshot>([
      [endpoint(0).id, { ...IDLE_LOAD, inflightRequests: 3, metricsAgeMs: 120.4 }],
      [endpoint(1).id, { ...IDLE_LOAD, inflightRequests: 0 }],
    ]);
    createDecisionSpanRecorder({ tracer, loadOf: (id) => loads.get(id) }).record(request(), decision());
    const a = onlySpan(exporter).attributes;
    expect(a[ATTR.strategy]).to.equal('cache-aware');
    expect(a[ATTR.reason]).to.equal('affinity');
    expect(a[ATTR.endpoint]).to.equal('127.0.0.1:8001');
    expect(a[ATTR.fallbacks]).to.deep.equal(['127.0.0.1:8002', '127.0.0.1:8003']);
    expect(a[ATTR.matchedBlocks]).to.equal(12);
    expect(a[ATTR.totalBlocks]).to.equal(14);
    expect(a[ATTR.matchFraction]).to.be.closeTo(12 / 14, 1e-6);
    expect(a[ATTR.decisionMicros]).to.equal(42);
    expect(a[ATTR.notes]).to.deep.equal(['imbalance check passed']);
    expect(a[ATTR.requestId]).to.equal('req-1');
    expect(a[ATTR.model]).to.equal('llama-3-8b');
    expect(a[ATTR.endpointMetricsAge]).to.equal(120);
    expect(a[ATTR.endpointInflight]).to.equal(3);
    // Candidates: best final score first (ep0 3.57, ep1 2, ep2 1.25), arrays aligned.
    expect(a[ATTR.candidateEndpoints]).to.deep.equal(['127.0.0.1:8001', '127.0.0.1:8002', '127.0.0.1:8003']);
    expect(a[ATTR.candidateScorePrefix + 'prefix']).to.deep.equal([0.857143, 0, 0.25]);
    expect(a[ATTR.candidateScorePrefix + 'queue']).to.deep.equal([0.5, 1, 0.25]);
    expect(a[ATTR.candidateTotals]).to.deep.equal([3.571429, 2, 1.25]);
    expect(a[ATTR.candidateMetricsAge]).to.deep.equal([120, -1, -1]);
    expect(a[ATTR.candidateInflight]).to.deep.equal([3, 0, -1]);
  });

  it('caps candidates but always keeps the chosen endpoint', () => {
    const eps = Array.from({ length: 40 }, (_, i) => endpoint(i));
    const cands: CandidateScore[] = eps.map((e, i) => candidate(e, i / 40, 0));
    const chosen = eps[0]!; // lowest score, e.g. an imbalance escape or random pick
    const d = decision({ endpoint: chosen, fallbacks: [], candidates: cands });
    const shown = selectSpanCandidates(d, 16);
    expect(shown).to.have.length(16);
    expect(shown.map((c) => c.endpointId)).to.include(chosen.id);
    expect(shown[0]!.endpointId).to.equal(eps[39]!.id);
    const attrs = decisionSpanAttributes(request(), d);
    expect(attrs[ATTR.candidateCount]).to.equal(40);
    expect((attrs[ATTR.candidateEndpoints] as string[]).length).to.equal(16);
  });

  it('builds no attributes for unsampled requests', () => {
    const { exporter, tracer } = setup({ sampled: false });
    createDecisionSpanRecorder({ tracer }).record(request({ traceparent: `00-${TID}-${SID}-00` }), decision());
    expect(exporter.getFinishedSpans()).to.have.length(0);
  });

  it('never puts prompt text into span attributes', () => {
    const { exporter, tracer } = setup();
    const rec = createDecisionSpanRecorder({ tracer });
    // Property: whatever the prompt is, no attribute value contains it (prompts of
    // 8+ characters, so an accidental match with a short id is not a false alarm).
    fc.assert(
      fc.property(
        fc.string({ minLength: 8, maxLength: 200 }).filter((s) => /[^\s]{8}/.test(s)),
        (prompt) => {
          exporter.reset();
          rec.record(request({ prefix: prompt, promptChars: prompt.length }), decision());
          const values = JSON.stringify(Object.values(onlySpan(exporter).attributes));
          expect(values.includes(JSON.stringify(prompt).slice(1, -1))).to.equal(false);
        },
      ),
      { seed: 11, numRuns: 100 },
    );
    exporter.reset();
    rec.record(request(), decision());
    const everything = JSON.stringify(onlySpan(exporter).attributes);
    expect(everything).to.not.include('hunter2');
    expect(everything).to.not.include(SECRET_PROMPT.slice(0, 20));
  });
});
