/**
 * Extension points of the scheduling pipeline: filters narrow the candidates, scorers
 * rate each candidate in [0,1], the framework multiplies by configured weights and sums,
 * and one picker orders the candidates (first = chosen, rest = fallbacks).
 * Hooks see decisions and outcomes so stateful plugins (the prefix index, load models)
 * can learn. A plugin implements any subset of these interfaces.
 */
import type { Endpoint, RouteRequest, RouteDecision, RequestOutcome, DecisionReason } from '../core/types.js';
import type { LoadSnapshot } from '../endpoints/load.js';
import type { MembershipChange } from '../endpoints/registry.js';
import type { Rng } from '../util/rng.js';

/** One candidate endpoint together with its current load picture. */
export interface Candidate {
  readonly endpoint: Endpoint;
  readonly load: LoadSnapshot;
}

/**
 * Scratchpad for one scheduling cycle. Plugins may store computed values (for example
 * the request's block hashes) under their own name for later plugins and hooks.
 */
export interface CycleState {
  readonly request: RouteRequest;
  readonly nowMs: number;
  readonly rng: Rng;
  readonly scratch: Map<string, unknown>;
  /** Notes for traces/explain (no prompt text). */
  readonly notes: string[];
  /** A filter or scorer may suggest the reason label; the picker has the final word. */
  reasonHint?: DecisionReason;
}

export interface Plugin {
  /** Instance name, unique in a profile; doubles as a metric label. */
  readonly name: string;
}

export interface Filter extends Plugin {
  /** Returns the eligible subset (may return the input array unchanged). Never throws for "none left". */
  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[];
}

export interface Scorer extends Plugin {
  /** One score per candidate, aligned by position, each in [0,1]. Higher is better. */
  score(state: CycleState, candidates: readonly Candidate[]): ArrayLike<number>;
}

export interface PickResult {
  /** Candidate positions, best first; the first is the chosen endpoint. */
  readonly order: readonly number[];
  readonly reason: DecisionReason;
}

export interface Picker extends Plugin {
  pick(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult;
}

/** Called after a decision is made (e.g. to insert the prefix into the chosen endpoint's index). */
export interface RoutedHook extends Plugin {
  onRouted(state: CycleState, decision: RouteDecision): void;
}

/** Called once when a routed request finishes, however it finishes. */
export interface CompletedHook extends Plugin {
  onCompleted(request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void;
  /** Optional: the request's first response byte reached the edge (its prefill is done). */
  onFirstByte?(request: RouteRequest, decision: RouteDecision): void;
}

/**
 * The membership hook: called once when the scheduler is built (no `change`) and again
 * after every membership change of the registry (endpoints joined, left or were updated).
 * `endpoints` is the whole member set after the change: drop all state of anything not in
 * it (ids or indexes), size per-index state for the newcomers.
 */
export interface EndpointsChangedHook extends Plugin {
  onEndpointsChanged(endpoints: readonly Endpoint[], change?: MembershipChange): void;
}

export interface WeightedScorer {
  readonly scorer: Scorer;
  readonly weight: number;
}

/** A complete strategy: what `strategy: cache-aware` etc. in config turns into. */
export interface Profile {
  readonly name: string;
  readonly filters: readonly Filter[];
  readonly scorers: readonly WeightedScorer[];
  readonly picker: Picker;
  readonly routedHooks: readonly RoutedHook[];
  readonly completedHooks: readonly CompletedHook[];
}

export function isRoutedHook(p: Plugin): p is RoutedHook {
  return typeof (p as Partial<RoutedHook>).onRouted === 'function';
}
export function isCompletedHook(p: Plugin): p is CompletedHook {
  return typeof (p as Partial<CompletedHook>).onCompleted === 'function';
}
