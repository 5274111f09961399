/**
 * One `cacheroute.route` span per routing decision, parented on the span Envoy created for
 * its ext_proc call (the request's `traceparent`), so a single trace shows Envoy's request,
 * the ext_proc stream and why the router chose the engine it chose.
 *
 * Why record after the fact: the scheduler's hot path stays free of tracing calls. The span
 * is built from the finished decision (via the scheduler's `onDecision` subscription) with
 * explicit start/end times that cover exactly the measured decision time.
 *
 * Bounded and prompt-free by construction: attributes are ids, closed-set labels and
 * numbers; candidate detail is capped (default 16, best first, chosen always included) and
 * stored as aligned arrays so the attribute count does not grow with the pool.
 */
import { SpanKind } from '@opentelemetry/api';
import type { Attributes, Tracer } from '@opentelemetry/api';
import type { CandidateScore, RouteDecision, RouteRequest } from '../core/types.js';
import type { PluginTiming } from '../scheduling/profile-runner.js';
import type { LoadSnapshot } from '../endpoints/load.js';
import { contextFromTraceHeaders } from './trace-context.js';

export const DECISION_SPAN_NAME = 'cacheroute.route';
export const DEFAULT_MAX_SPAN_CANDIDATES = 16;

/** Attribute keys of the decision span (documented in docs/observability.md). */
export const ATTR = {
  requestId: 'cacheroute.request_id',
  model: 'cacheroute.model',
  strategy: 'cacheroute.strategy',
  profile: 'cacheroute.profile',
  pluginMicrosPrefix: 'cacheroute.plugin_us.',
  reason: 'cacheroute.reason',
  endpoint: 'cacheroute.endpoint',
  pool: 'cacheroute.pool',
  fallbacks: 'cacheroute.fallbacks',
  matchedBlocks: 'cacheroute.prefix.matched_blocks',
  totalBlocks: 'cacheroute.prefix.total_blocks',
  matchFraction: 'cacheroute.prefix.match_fraction',
  promptTokens: 'cacheroute.prompt_tokens_estimate',
  decisionMicros: 'cacheroute.decision_us',
  notes: 'cacheroute.notes',
  endpointMetricsAge: 'cacheroute.endpoint.metrics_age_ms',
  endpointInflight: 'cacheroute.endpoint.inflight_requests',
  candidateCount: 'cacheroute.candidates.count',
  candidateEndpoints: 'cacheroute.candidates.endpoint',
  candidateTotals: 'cacheroute.candidates.score.final',
  candidateScorePrefix: 'cacheroute.candidates.score.',
  candidateMetricsAge: 'cacheroute.candidates.metrics_age_ms',
  candidateInflight: 'cacheroute.candidates.inflight_requests',
  pdWhy: 'cacheroute.pd.why',
  pdPrefillEndpoint: 'cacheroute.pd.prefill_endpoint',
  pdUncachedTokens: 'cacheroute.pd.uncached_tokens',
  pdPrefillCachedTokens: 'cacheroute.pd.prefill_cached_tokens',
} as const;

/** Looks up an endpoint's current load picture (for signal ages); undefined if unknown. */
export type LoadLookup = (endpointId: string) => LoadSnapshot | undefined;

/** Age attribute value: milliseconds, rounded; -1 means "never scraped / unknown". */
function ageMs(load: LoadSnapshot | undefined): number {
  if (!load || !Number.isFinite(load.metricsAgeMs)) return -1;
  return Math.round(load.metricsAgeMs);
}

function round6(x: number): number {
  return Number.isFinite(x) ? Math.round(x * 1e6) / 1e6 : 0;
}

/** The candidates shown on the span: best final score first, chosen always present. */
export function selectSpanCandidates(decision: RouteDecision, max: number): CandidateScore[] {
  const sorted = [...decision.candidates].sort(
    (a, b) => b.total - a.total || (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0),
  );
  const top = sorted.slice(0, Math.max(1, max));
  const chosenId = decision.endpoint.id;
  if (!top.some((c) => c.endpointId === chosenId)) {
    const chosen = sorted.find((c) => c.endpointId === chosenId);
    if (chosen) top[top.length - 1] = chosen;
  }
  return top;
}

/** All span attributes for one decision. Pure: no prompt text can reach here except via ids. */
export function decisionSpanAttributes(
  request: RouteRequest,
  decision: RouteDecision,
  opts: { maxCandidates?: number; loadOf?: LoadLookup; timings?: readonly PluginTiming[] } = {},
): Attributes {
  const loadOf = opts.loadOf ?? (() => undefined);
  const total = decision.totalBlocks;
  const attrs: Attributes = {
    [ATTR.requestId]: decision.requestId,
    [ATTR.strategy]: decision.strategy,
    [ATTR.reason]: decision.reason,
    [ATTR.endpoint]: decision.endpoint.id,
    [ATTR.pool]: decision.endpoint.pool,
    [ATTR.fallbacks]: decision.fallbacks.map((e) => e.id),
    [ATTR.matchedBlocks]: decision.matchedBlocks,
    [ATTR.totalBlocks]: total,
    [ATTR.matchFraction]: total > 0 ? round6(decision.matchedBlocks / total) : 0,
    [ATTR.promptTokens]: request.promptTokens,
    [ATTR.decisionMicros]: round6(decision.decisionMicros),
    [ATTR.candidateCount]: decision.candidates.length,
  };
  if (decision.profile !== undefined) attrs[ATTR.profile] = decision.profile;
  const pd = decision.disagg;
  if (pd !== undefined) {
    attrs[ATTR.pdWhy] = pd.why;
    attrs[ATTR.pdUncachedTokens] = pd.uncachedTokens;
    if (pd.prefill !== undefined) attrs[ATTR.pdPrefillEndpoint] = pd.prefill.id;
    if (pd.prefillCachedTokens !== undefined) attrs[ATTR.pdPrefillCachedTokens] = pd.prefillCachedTokens;
  }
  // Per-plugin call time (the profile handler's choice included), summed per plugin name.
  for (const t of opts.timings ?? []) {
    const key = ATTR.pluginMicrosPrefix + t.plugin;
    attrs[key] = round6(((attrs[key] as number | undefined) ?? 0) + t.micros);
  }
  if (request.model !== '') attrs[ATTR.model] = request.model;
  if (decision.notes && decision.notes.length > 0) attrs[ATTR.notes] = [...decision.notes];
  const chosenLoad = loadOf(decision.endpoint.id);
  attrs[ATTR.endpointMetricsAge] = ageMs(chosenLoad);
  if (chosenLoad) attrs[ATTR.endpointInflight] = chosenLoad.inflightRequests;

  const shown = selectSpanCandidates(decision, opts.maxCandidates ?? DEFAULT_MAX_SPAN_CANDIDATES);
  if (shown.length > 0) {
    attrs[ATTR.candidateEndpoints] = shown.map((c) => c.endpointId);
    attrs[ATTR.candidateTotals] = shown.map((c) => round6(c.total));
    const scorerNames = new Set<string>();
    for (const c of shown) for (const k of Object.keys(c.scores)) scorerNames.add(k);
    for (const name of [...scorerNames].sort()) {
      attrs[ATTR.candidateScorePrefix + name] = shown.map((c) => round6(c.scores[name] ?? 0));
    }
    const loads = shown.map((c) => loadOf(c.endpointId));
    attrs[ATTR.candidateMetricsAge] = loads.map(ageMs);
    attrs[ATTR.candidateInflight] = loads.map((l) => l?.inflightRequests ?? -1);
  }
  return attrs;
}

export interface DecisionSpanRecorderOptions {
  tracer: Tracer;
  maxCandidates?: number;
  loadOf?: LoadLookup;
  /** Wall clock in epoch ms (fractional); default performance.timeOrigin + performance.now(). */
  nowEpochMs?: () => number;
}

export interface DecisionSpanRecorder {
  /** Emits the finished `cacheroute.route` span for a decision that was just made. */
  record(request: RouteRequest, decision: RouteDecision, timings?: readonly PluginTiming[]): void;
}

export function createDecisionSpanRecorder(opts: DecisionSpanRecorderOptions): DecisionSpanRecorder {
  const now = opts.nowEpochMs ?? (() => performance.timeOrigin + performance.now());
  return {
    record(request, decision, timings) {
      const endMs = now();
      const startMs = endMs - Math.max(0, decision.decisionMicros) / 1000;
      const parent = contextFromTraceHeaders(request.traceparent, request.tracestate);
      const attrOpts: { maxCandidates?: number; loadOf?: LoadLookup; timings?: readonly PluginTiming[] } = {};
      if (timings !== undefined) attrOpts.timings = timings;
      if (opts.maxCandidates !== undefined) attrOpts.maxCandidates = opts.maxCandidates;
      if (opts.loadOf !== undefined) attrOpts.loadOf = opts.loadOf;
      const span = opts.tracer.startSpan(DECISION_SPAN_NAME, { kind: SpanKind.INTERNAL, startTime: startMs }, parent);
      // Unsampled (or no SDK): skip building attributes altogether.
      if (span.isRecording()) span.setAttributes(decisionSpanAttributes(request, decision, attrOpts));
      span.end(endMs);
    },
  };
}
