/**
 * The last N decisions, kept for `GET /debug/decisions?n=` (explain on demand).
 *
 * Why a fixed ring of compact records: it answers "why did request X go there?" after the
 * fact without logging every decision, with memory bounded by `telemetry.recentDecisions`
 * (each record holds at most MAX_EXPLAIN_CANDIDATES candidates and no prompt text). When
 * the request finishes, its outcome (status, engine-reported cached tokens) is attached to
 * the record if it is still in the ring, so predicted and real cache hits sit side by side.
 *
 * Cost: recording is on every request's path and reading is rare, so the ring keeps raw
 * facts in reused slots (the decision object itself — immutable once made — plus the few
 * request fields shown, never the prompt) and explains them only when read: the candidate
 * selection, time string and trace id are computed in `latest()`.
 */
import type { CandidateScore, DisaggDecision, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import { selectSpanCandidates } from './decision-span.js';
import { traceIdOf } from './trace-context.js';

export const MAX_EXPLAIN_CANDIDATES = 16;

export interface ExplainedCandidate {
  readonly endpoint: string;
  readonly scores: Readonly<Record<string, number>>;
  readonly total: number;
}

export interface DecisionRecord {
  readonly requestId: string;
  readonly traceId?: string;
  /** Wall-clock time of the decision (ISO 8601). */
  readonly time: string;
  readonly model: string;
  readonly strategy: string;
  readonly reason: string;
  readonly endpoint: string;
  readonly fallbacks: readonly string[];
  readonly matchedBlocks: number;
  readonly totalBlocks: number;
  readonly promptTokensEstimate: number;
  readonly decisionMicros: number;
  readonly notes: readonly string[];
  readonly candidateCount: number;
  readonly candidates: readonly ExplainedCandidate[];
  /** Prefill/decode part: why prefill was or was not split off, and onto which engine. */
  readonly disagg?: {
    readonly why: string;
    readonly prefill?: string;
    readonly promptTokens: number;
    readonly uncachedTokens: number;
    readonly prefillCachedTokens?: number;
    readonly prefillReason?: string;
  };
  outcome?: {
    readonly status?: number;
    readonly aborted: boolean;
    readonly servedBy?: string;
    readonly promptTokens?: number;
    readonly cachedTokens?: number;
    readonly completionTokens?: number;
  };
}

function explainDisagg(d: DisaggDecision): NonNullable<DecisionRecord['disagg']> {
  return {
    why: d.why,
    ...(d.prefill !== undefined ? { prefill: d.prefill.id } : {}),
    promptTokens: d.promptTokens,
    uncachedTokens: d.uncachedTokens,
    ...(d.prefillCachedTokens !== undefined ? { prefillCachedTokens: d.prefillCachedTokens } : {}),
    ...(d.prefillReason !== undefined ? { prefillReason: d.prefillReason } : {}),
  };
}

function explainCandidate(c: CandidateScore): ExplainedCandidate {
  return { endpoint: c.endpointId, scores: { ...c.scores }, total: c.total };
}

/** What the ring keeps per decision (a slot is reused when the ring wraps). */
interface Slot {
  requestId: string;
  traceparent: string | undefined;
  model: string;
  promptTokens: number;
  epochMs: number;
  decision: RouteDecision;
  outcome: RequestOutcome | undefined;
}

function explain(slot: Slot): DecisionRecord {
  const { decision } = slot;
  const traceId = traceIdOf(slot.traceparent);
  const rec: DecisionRecord = {
    requestId: slot.requestId,
    ...(traceId !== undefined ? { traceId } : {}),
    time: new Date(slot.epochMs).toISOString(),
    model: slot.model,
    strategy: decision.strategy,
    reason: decision.reason,
    endpoint: decision.endpoint.id,
    fallbacks: decision.fallbacks.map((e) => e.id),
    matchedBlocks: decision.matchedBlocks,
    totalBlocks: decision.totalBlocks,
    promptTokensEstimate: slot.promptTokens,
    decisionMicros: decision.decisionMicros,
    notes: [...(decision.notes ?? [])],
    candidateCount: decision.candidates.length,
    candidates: selectSpanCandidates(decision, MAX_EXPLAIN_CANDIDATES).map(explainCandidate),
    ...(decision.disagg !== undefined ? { disagg: explainDisagg(decision.disagg) } : {}),
  };
  const outcome = slot.outcome;
  if (outcome !== undefined) {
    rec.outcome = {
      aborted: outcome.aborted,
      ...(outcome.status !== undefined ? { status: outcome.status } : {}),
      ...(outcome.servedBy !== undefined ? { servedBy: outcome.servedBy } : {}),
      ...(outcome.promptTokens !== undefined ? { promptTokens: outcome.promptTokens } : {}),
      ...(outcome.cachedTokens !== undefined ? { cachedTokens: outcome.cachedTokens } : {}),
      ...(outcome.completionTokens !== undefined ? { completionTokens: outcome.completionTokens } : {}),
    };
  }
  return rec;
}

export class RecentDecisions {
  private readonly ring: (Slot | undefined)[];
  private next = 0;
  private size = 0;
  private readonly byRequest = new Map<string, Slot>();

  constructor(
    readonly capacity: number,
    private readonly nowEpochMs: () => number = Date.now,
  ) {
    this.ring = new Array<Slot | undefined>(Math.max(0, Math.floor(capacity)));
  }

  record(request: RouteRequest, decision: RouteDecision): void {
    if (this.ring.length === 0) return;
    let slot = this.ring[this.next];
    if (slot === undefined) {
      slot = { requestId: '', traceparent: undefined, model: '', promptTokens: 0, epochMs: 0, decision, outcome: undefined };
      this.ring[this.next] = slot;
    } else if (this.byRequest.get(slot.requestId) === slot) {
      this.byRequest.delete(slot.requestId);
    }
    slot.requestId = decision.requestId;
    slot.traceparent = request.traceparent;
    slot.model = request.model;
    slot.promptTokens = request.promptTokens;
    slot.epochMs = this.nowEpochMs();
    slot.decision = decision;
    slot.outcome = undefined;
    this.byRequest.set(slot.requestId, slot);
    this.next = this.next + 1 === this.ring.length ? 0 : this.next + 1;
    if (this.size < this.ring.length) this.size++;
  }

  /** Attaches the outcome to the request's record if it is still kept. */
  recordOutcome(requestId: string, outcome: RequestOutcome): void {
    const slot = this.byRequest.get(requestId);
    if (slot !== undefined) slot.outcome = outcome;
  }

  /** Up to n most recent records, newest first (explained now, from the kept facts). */
  latest(n: number = this.size): DecisionRecord[] {
    const count = Math.max(0, Math.min(Math.floor(n), this.size));
    const out: DecisionRecord[] = [];
    for (let i = 1; i <= count; i++) {
      const slot = this.ring[(this.next - i + this.ring.length) % this.ring.length];
      if (slot) out.push(explain(slot));
    }
    return out;
  }

  get length(): number {
    return this.size;
  }
}
