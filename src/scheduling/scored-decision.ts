/**
 * The RouteDecision the scheduler returns, with its per-candidate score report built on
 * first read instead of on every decision.
 *
 * Why: the report (one object per candidate, each with a scorer-name → score record) is
 * the largest allocation of a routing decision, and only tracing spans and the explain
 * endpoint read it. The decision keeps the arrays the profile run produced anyway (candidates,
 * order, clamped scores, totals) and turns them into the same `CandidateScore[]` when
 * `candidates` is first read; later reads return that array. `toJSON` includes it, so a
 * serialised decision looks as before.
 */
import type { CandidateScore, DecisionReason, DisaggDecision, Endpoint, RouteDecision } from '../core/types.js';
import type { Candidate } from '../framework/types.js';

/** Everything of a decision but the score report and the notes. */
export type DecisionFields = Omit<RouteDecision, 'candidates' | 'notes' | 'profile' | 'matchedChars'> & {
  readonly profile: string;
  readonly matchedChars: number;
};

/** What the score report is built from (a profile run's output; kept unmodified). */
export interface ScoreSource {
  /** Only `endpoint` of each candidate is read (candidates' loads may be reused later). */
  readonly candidates: readonly Candidate[];
  readonly order: readonly number[];
  /** The whole order when `order` is only its head (ProfileRun.fullOrder). */
  readonly fullOrder?: () => readonly number[];
  readonly scores: readonly ArrayLike<number>[];
  readonly totals: readonly number[];
  readonly scorerNames: readonly string[];
}

export class ScoredDecision implements RouteDecision {
  readonly requestId: string;
  readonly endpoint: Endpoint;
  readonly fallbacks: readonly Endpoint[];
  readonly strategy: string;
  readonly profile: string;
  readonly reason: DecisionReason;
  readonly matchedBlocks: number;
  readonly totalBlocks: number;
  readonly matchedChars: number;
  readonly decisionMicros: number;
  /** Present only when the cycle left notes (as with the plain object it replaces). */
  declare readonly notes?: readonly string[];
  /** Present only when a disaggregation handler ran. */
  declare readonly disagg?: DisaggDecision;
  #source: ScoreSource | undefined;
  #report: readonly CandidateScore[] | undefined;

  constructor(f: DecisionFields, source: ScoreSource, notes: readonly string[] | undefined) {
    this.requestId = f.requestId;
    this.endpoint = f.endpoint;
    this.fallbacks = f.fallbacks;
    this.strategy = f.strategy;
    this.profile = f.profile;
    this.reason = f.reason;
    this.matchedBlocks = f.matchedBlocks;
    this.totalBlocks = f.totalBlocks;
    this.matchedChars = f.matchedChars;
    this.decisionMicros = f.decisionMicros;
    if (notes !== undefined) (this as { notes?: readonly string[] }).notes = notes;
    if (f.disagg !== undefined) (this as { disagg?: DisaggDecision }).disagg = f.disagg;
    this.#source = source;
  }

  /** Every candidate that reached the picker, best first, with raw scores and weighted total. */
  get candidates(): readonly CandidateScore[] {
    if (this.#report === undefined) {
      this.#report = scoreReport(this.#source!);
      this.#source = undefined;
    }
    return this.#report;
  }

  toJSON(): RouteDecision {
    return {
      requestId: this.requestId,
      endpoint: this.endpoint,
      fallbacks: this.fallbacks,
      strategy: this.strategy,
      profile: this.profile,
      reason: this.reason,
      matchedBlocks: this.matchedBlocks,
      totalBlocks: this.totalBlocks,
      matchedChars: this.matchedChars,
      candidates: this.candidates,
      decisionMicros: this.decisionMicros,
      ...(this.notes !== undefined ? { notes: this.notes } : {}),
      ...(this.disagg !== undefined ? { disagg: this.disagg } : {}),
    };
  }
}

function scoreReport(s: ScoreSource): CandidateScore[] {
  const names = s.scorerNames;
  return (s.fullOrder !== undefined ? s.fullOrder() : s.order).map((pos) => {
    const rec: Record<string, number> = {};
    for (let k = 0; k < names.length; k++) rec[names[k]!] = s.scores[k]![pos]!;
    return { endpointId: s.candidates[pos]!.endpoint.id, scores: rec, total: s.totals[pos]! };
  });
}
