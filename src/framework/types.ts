/**
 * Extension points of the scheduling pipeline: filters narrow the candidates, scorers
 * rate each candidate in [0,1], the framework multiplies by configured weights and sums,
 * and one picker orders the candidates (first = chosen, rest = fallbacks).
 * A profile handler chooses which profile runs. Hooks see every decision and outcome
 * (whichever profile ran) so stateful plugins (the prefix index, session bindings) can
 * learn. A plugin implements any subset of these interfaces and is filed under each.
 */
import type { DecisionReason, DisaggDecision, Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
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
  /** Instance name, unique in the plugin graph; doubles as a metric label. */
  readonly name: string;
  /** Optional: this plugin's state for `/debug/plugins` (JSON-serialisable, no prompt text). */
  debugState?(): unknown;
}

/**
 * Optional lifecycle of a plugin with background work (timers, subscriptions). `start` must
 * not block: it launches its loops, which stop when `signal` aborts or `stop` is called.
 */
export interface LifecyclePlugin extends Plugin {
  start?(signal: AbortSignal): void;
  stop?(): void | Promise<void>;
}

export interface Filter extends Plugin {
  /** Returns the eligible subset (may return the input array unchanged). Never throws for "none left". */
  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[];
}

export interface Scorer extends Plugin {
  /**
   * One score per candidate, aligned by position, each in [0,1]. Higher is better. Return a
   * fresh array on every call: the decision keeps it for its score report.
   */
  score(state: CycleState, candidates: readonly Candidate[]): ArrayLike<number>;
}

export interface PickResult {
  /**
   * Candidate positions, best first; the first is the chosen endpoint. With `fullOrder` this
   * may be only the head of the order: its first ORDER_HEAD positions (or all of them when
   * there are fewer candidates), exactly as the full order starts.
   */
  readonly order: readonly number[];
  /**
   * The whole order, built on demand, when `order` is only its head. Why: a decision reads
   * the chosen endpoint and at most 16 fallbacks; only the per-candidate score report (read
   * by tracing and /debug) reads further, and sorting a 1,024-endpoint fleet for it was most
   * of a pick. Called at most once, after the cycle; it must not depend on state the cycle
   * changes afterwards (it sees the same totals and tie keys the head was built from).
   */
  readonly fullOrder?: () => readonly number[];
  readonly reason: DecisionReason;
}

/** The chosen endpoint plus the most fallbacks a config allows (`fallbacks` ≤ 16): how much of an order a picker must return. */
export const ORDER_HEAD = 17;

export interface Picker extends Plugin {
  pick(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult;
}

/**
 * Runs between scoring and the picker: may order the candidates itself for the requests it
 * is responsible for (e.g. cold requests) and return undefined for all others, which the
 * picker then orders. The first placement that answers wins.
 */
export interface Placement extends Plugin {
  place(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult | undefined;
}

/** What a plugin knows about the chosen endpoint that the decision reports. */
export interface DecisionAnnotation {
  /** Leading prompt blocks the chosen endpoint is believed to hold. */
  readonly matchedBlocks?: number;
  /** Prompt blocks considered. */
  readonly totalBlocks?: number;
  /** Prompt characters the chosen endpoint is believed to hold (matched blocks × block size). */
  readonly matchedChars?: number;
}

/** Called after the pick, before the decision is built: the plugin annotates the decision. */
export interface DecisionAnnotator extends Plugin {
  annotate(state: CycleState, chosen: Candidate): DecisionAnnotation | undefined;
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

/** One scheduling profile: filters → weighted scorers → placements → picker. */
export interface Profile {
  readonly name: string;
  readonly filters: readonly Filter[];
  readonly scorers: readonly WeightedScorer[];
  readonly placements: readonly Placement[];
  readonly picker: Picker;
}

/** What a second stage may learn from a run of another profile over the same candidates. */
export interface StagePick {
  readonly chosen: Candidate;
  readonly reason: DecisionReason;
  /** What the annotators report about `chosen` (its prefix match). */
  readonly annotation: DecisionAnnotation;
}

/** Runs a profile over this cycle's candidates (timed and reported like the first run). */
export type StageRunner = (profile: Profile) => StagePick;

/**
 * Chooses which profile runs for a request (GIE's ProfileHandler). Called before any filter;
 * `profiles` are all configured ones, by name. The chosen profile's pick is the request's
 * destination.
 */
export interface ProfileHandler extends Plugin {
  pickProfile(state: CycleState, profiles: ReadonlyMap<string, Profile>): Profile;
  /** Profile names the handler may pick; the graph builder checks they exist. */
  readonly requiredProfiles?: readonly string[];
  /**
   * Optional second stage (prefill/decode disaggregation): called after the first pick with
   * it and its annotation; may run other profiles through `run` and returns the decision's
   * `disagg` part. Throwing a RouterError refuses the request (conditional decode's 412).
   */
  secondStage?(state: CycleState, first: StagePick, profiles: ReadonlyMap<string, Profile>, run: StageRunner): DisaggDecision;
}

/** A type guard: the plugin implements `method` (extension points are found by their method). */
function implementing<T extends Plugin>(method: Exclude<keyof T, keyof Plugin>): (p: Plugin) => p is T {
  return (p: Plugin): p is T => typeof (p as unknown as Record<PropertyKey, unknown>)[method] === 'function';
}

export const isFilter = implementing<Filter>('filter');
export const isScorer = implementing<Scorer>('score');
export const isPicker = implementing<Picker>('pick');
export const isPlacement = implementing<Placement>('place');
export const isProfileHandler = implementing<ProfileHandler>('pickProfile');
export const isDecisionAnnotator = implementing<DecisionAnnotator>('annotate');
export const isEndpointsChangedHook = implementing<EndpointsChangedHook>('onEndpointsChanged');
export const isRoutedHook = implementing<RoutedHook>('onRouted');
export const isCompletedHook = implementing<CompletedHook>('onCompleted');
/** A plugin with background work (start and/or stop). */
export function isLifecyclePlugin(p: Plugin): p is LifecyclePlugin {
  const l = p as LifecyclePlugin;
  return typeof l.start === 'function' || typeof l.stop === 'function';
}
