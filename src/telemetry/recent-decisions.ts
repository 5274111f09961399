/**
 * The last N decisions, kept for `GET /debug/decisions?n=` (explain on demand).
 *
 * Why a fixed ring of compact records: it answers "why did request X go there?" after the
 * fact without logging every decision, with memory bounded by `telemetry.recentDecisions`
 * (each record holds at most MAX_EXPLAIN_CANDIDATES candidates and no prompt text). When
 * the request finishes, its outcome (status, engine-reported cached tokens) is attached to
 * the record if it is still in the ring, so predicted and real cache hits sit side by side.
 */
import type { CandidateScore, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
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
  outcome?: {
    readonly status?: number;
    readonly aborted: boolean;
    readonly servedBy?: string;
    readonly promptTokens?: number;
    readonly cachedTokens?: number;
    readonly completionTokens?: number;
  };
}

function explainCandidate(c: CandidateScore): ExplainedCandidate {
  return { endpoint: c.endpointId, scores: { ...c.scores }, total: c.total };
}

export class RecentDecisions {
  private readonly ring: (DecisionRecord | undefined)[];
  private next = 0;
  private size = 0;
  private readonly byRequest = new Map<string, DecisionRecord>();

  constructor(
    readonly capacity: number,
    private readonly nowEpochMs: () => number = Date.now,
  ) {
    this.ring = new Array<DecisionRecord | undefined>(Math.max(0, Math.floor(capacity)));
  }

  record(request: RouteRequest, decision: RouteDecision): void {
    if (this.ring.length === 0) return;
    const traceId = traceIdOf(request.traceparent);
    const rec: DecisionRecord = {
      requestId: decision.requestId,
      ...(traceId !== undefined ? { traceId } : {}),
      time: new Date(this.nowEpochMs()).toISOString(),
      model: request.model,
      strategy: decision.strategy,
      reason: decision.reason,
      endpoint: decision.endpoint.id,
      fallbacks: decision.fallbacks.map((e) => e.id),
      matchedBlocks: decision.matchedBlocks,
      totalBlocks: decision.totalBlocks,
      promptTokensEstimate: request.promptTokens,
      decisionMicros: decision.decisionMicros,
      notes: [...(decision.notes ?? [])],
      candidateCount: decision.candidates.length,
      candidates: selectSpanCandidates(decision, MAX_EXPLAIN_CANDIDATES).map(explainCandidate),
    };
    const evicted = this.ring[this.next];
    if (evicted && this.byRequest.get(evicted.requestId) === evicted) this.byRequest.delete(evicted.requestId);
    this.ring[this.next] = rec;
    this.byRequest.set(rec.requestId, rec);
    this.next = (this.next + 1) % this.ring.length;
    this.size = Math.min(this.size + 1, this.ring.length);
  }

  /** Attaches the outcome to the request's record if it is still kept. */
  recordOutcome(requestId: string, outcome: RequestOutcome): void {
    const rec = this.byRequest.get(requestId);
    if (!rec) return;
    rec.outcome = {
      aborted: outcome.aborted,
      ...(outcome.status !== undefined ? { status: outcome.status } : {}),
      ...(outcome.servedBy !== undefined ? { servedBy: outcome.servedBy } : {}),
      ...(outcome.promptTokens !== undefined ? { promptTokens: outcome.promptTokens } : {}),
      ...(outcome.cachedTokens !== undefined ? { cachedTokens: outcome.cachedTokens } : {}),
      ...(outcome.completionTokens !== undefined ? { completionTokens: outcome.completionTokens } : {}),
    };
  }

  /** Up to n most recent records, newest first. */
  latest(n: number = this.size): DecisionRecord[] {
    const count = Math.max(0, Math.min(Math.floor(n), this.size));
    const out: DecisionRecord[] = [];
    for (let i = 1; i <= count; i++) {
      const rec = this.ring[(this.next - i + this.ring.length) % this.ring.length];
      if (rec) out.push(rec);
    }
    return out;
  }

  get length(): number {
    return this.size;
  }
}
