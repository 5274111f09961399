/**
 * The scheduler: the RoutingService the ext_proc edge calls. Per request it snapshots the
 * load of every endpoint, lets the profile handler choose a profile, runs it (filters →
 * weighted scorers → placements → picker), lets annotators describe the choice (the prefix
 * plugin reports matched blocks), builds the RouteDecision (chosen endpoint + ordered
 * fallbacks + per-candidate scores), counts the request as in flight on the chosen endpoint,
 * runs the routed hooks of every plugin and data-layer source and returns a ticket whose
 * first `finish` releases the accounting and runs the completed hooks.
 *
 * Everything is synchronous: a decision is pure CPU work on in-memory state, so there is no
 * interleaving between the match, the pick and the index update of one request.
 */
import { RouterError } from '../core/errors.js';
import type { RoutingService, RouteTicket } from '../core/routing-service.js';
import type { DisaggDecision, Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import type { DataLayer } from '../datalayer/data-layer.js';
import type { InflightLease } from '../endpoints/inflight.js';
import { newLoadScratch } from '../endpoints/load.js';
import type { EndpointRegistry, LoadSlot, MembershipChange } from '../endpoints/registry.js';
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../util/clock.js';
import type { Rng } from '../util/rng.js';
import { DecisionEmitter, type DecisionListener } from './decision-events.js';
import type { ServiceKey } from '../framework/plugin-api.js';
import type { BuiltGraph } from './plugin-graph.js';
import { runProfileTimed, type PluginTiming, type ProfileRun } from './profile-runner.js';
import { ScoredDecision } from './scored-decision.js';
import {
  isCompletedHook,
  isEndpointsChangedHook,
  isLifecyclePlugin,
  isRoutedHook,
  type Candidate,
  type CompletedHook,
  type CycleState,
  type DecisionAnnotator,
  type EndpointsChangedHook,
  type LifecyclePlugin,
  type Plugin,
  type Profile,
  type ProfileHandler,
  type RoutedHook,
  type StagePick,
} from '../framework/types.js';

export interface SchedulerOptions {
  readonly registry: EndpointRegistry;
  readonly graph: BuiltGraph;
  /** Label reported as `decision.strategy` (the shorthand name, or the profile's name). */
  readonly strategy: string;
  /** Number of fallback endpoints returned after the chosen one. */
  readonly fallbacks: number;
  readonly clock: Clock;
  readonly rng: Rng;
  readonly logger: Logger;
  /** Per-scheduler shared services created by plugin factories. */
  readonly services: ReadonlyMap<string, unknown>;
  /**
   * Request-lifecycle observers outside the plugin graph (the data layer's sources), run after
   * the plugins' hooks on every decision and outcome.
   */
  readonly observers?: readonly Plugin[];
  /** The data layer whose sources are the observers (exposed for telemetry, /debug and tests). */
  readonly dataLayer?: DataLayer;
}

type State = 'new' | 'started' | 'stopped';

/** A plugin's state for `/debug/plugins`. */
export interface PluginDebugEntry {
  readonly name: string;
  readonly type: string;
  readonly state?: unknown;
}

export class Scheduler implements RoutingService {
  readonly registry: EndpointRegistry;
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly handler: ProfileHandler;
  readonly strategy: string;
  readonly dataLayer: DataLayer | undefined;
  private readonly graph: BuiltGraph;
  private readonly clock: Clock;
  private readonly rng: Rng;
  private readonly logger: Logger;
  private readonly fallbacks: number;
  private readonly events: DecisionEmitter;
  private readonly services: ReadonlyMap<string, unknown>;
  private readonly abort = new AbortController();
  private readonly scorerNames: ReadonlyMap<Profile, readonly string[]>;
  private readonly ticketContext: TicketContext;
  private readonly routedHooks: readonly RoutedHook[];
  private readonly annotators: readonly DecisionAnnotator[];
  private readonly lifecyclePlugins: readonly LifecyclePlugin[];
  /** True when the handler is a configured plugin (its call is timed and reported). */
  private readonly handlerIsPlugin: boolean;
  /** One Candidate per endpoint, reused by every cycle (see snapshotCandidates). */
  private pool: LoadSlot[] = [];
  /** The member list `pool` was last checked against. */
  private poolOf: readonly Endpoint[] | undefined;
  private state: State = 'new';

  constructor(opts: SchedulerOptions) {
    this.registry = opts.registry;
    this.graph = opts.graph;
    this.profiles = opts.graph.profiles;
    this.handler = opts.graph.handler;
    this.strategy = opts.strategy;
    this.dataLayer = opts.dataLayer;
    this.clock = opts.clock;
    this.rng = opts.rng;
    this.logger = opts.logger;
    this.services = opts.services;
    this.fallbacks = Math.max(0, Math.floor(opts.fallbacks));
    this.events = new DecisionEmitter(opts.logger);
    this.handlerIsPlugin = opts.graph.instances.some((i) => i.plugin === opts.graph.handler);
    const names = new Map<Profile, readonly string[]>();
    for (const p of this.profiles.values())
      names.set(
        p,
        p.scorers.map((s) => s.scorer.name),
      );
    this.scorerNames = names;
    const observers = opts.observers ?? [];
    this.lifecyclePlugins = [...opts.graph.lifecycle, ...observers.filter(isLifecyclePlugin)];
    this.routedHooks = [...opts.graph.routedHooks, ...observers.filter(isRoutedHook)];
    const completedHooks: readonly CompletedHook[] = [...opts.graph.completedHooks, ...observers.filter(isCompletedHook)];
    this.annotators = opts.graph.annotators;
    this.ticketContext = { completedHooks, events: this.events, clock: this.clock, logger: this.logger, registry: this.registry };
    const changed: readonly EndpointsChangedHook[] = [...opts.graph.changedHooks, ...observers.filter(isEndpointsChangedHook)];
    const all = this.registry.all();
    for (const p of changed) p.onEndpointsChanged(all);
    this.registry.onMembershipChange((change) => this.onMembership(changed, change));
  }

  /** Forwards a registry membership change to every plugin's membership hook. */
  private onMembership(hooks: readonly EndpointsChangedHook[], change: MembershipChange): void {
    for (const p of hooks) {
      try {
        p.onEndpointsChanged(change.endpoints, change);
      } catch (err) {
        this.logger.warn('membership hook failed', { plugin: p.name, error: errText(err) });
      }
    }
    this.logger.info('endpoints changed', {
      added: change.added.map((e) => e.id).join(','),
      removed: change.removed.map((e) => e.id).join(','),
      updated: change.updated.map((e) => e.id).join(','),
      members: change.endpoints.length,
    });
  }

  /**
   * The only profile, or the first one (tests and tools that run single-profile graphs).
   */
  get profile(): Profile {
    return this.profiles.values().next().value!;
  }

  /**
   * Starts plugins with background work (they get an AbortSignal that fires on stop).
   * Idempotent; a stopped scheduler does not restart. Synchronous: plugins start their
   * own async loops and own their errors.
   */
  start(): void {
    if (this.state !== 'new') return;
    this.state = 'started';
    for (const p of this.lifecyclePlugins) {
      if (p.start === undefined) continue;
      try {
        p.start(this.abort.signal);
      } catch (err) {
        this.logger.warn('plugin start failed', { plugin: p.name, error: errText(err) });
      }
    }
  }

  /**
   * Stops background work of plugins. Idempotent. Routing keeps working afterwards on the
   * state it has (so requests still draining through the edge are unaffected).
   */
  stop(): void {
    if (this.state === 'stopped') return;
    const wasStarted = this.state === 'started';
    this.state = 'stopped';
    this.abort.abort();
    if (!wasStarted) return;
    for (const p of this.lifecyclePlugins) {
      if (p.stop === undefined) continue;
      try {
        const r = p.stop();
        if (r instanceof Promise)
          r.catch((err: unknown) => this.logger.warn('plugin stop failed', { plugin: p.name, error: errText(err) }));
      } catch (err) {
        this.logger.warn('plugin stop failed', { plugin: p.name, error: errText(err) });
      }
    }
  }

  /** Lifecycle state: new → started → stopped. */
  get lifecycle(): 'new' | 'started' | 'stopped' {
    return this.state;
  }

  endpoints(): readonly Endpoint[] {
    return this.registry.all();
  }

  /** Observes every decision, outcome and rejection. Returns the unsubscribe function. */
  onDecision(listener: DecisionListener): () => void {
    return this.events.subscribe(listener);
  }

  /** A shared service a plugin created (e.g. the prefix index), if this graph has it. */
  service<T>(key: ServiceKey<T>): T | undefined {
    return this.services.get(key.id) as T | undefined;
  }

  /** A plugin instance by name (tests, tools). */
  plugin(name: string): Plugin | undefined {
    return this.graph.instances.find((i) => i.plugin.name === name)?.plugin;
  }

  /** Every plugin instance with its type and, when it exposes one, its state (`/debug/plugins`). */
  pluginStates(): PluginDebugEntry[] {
    return this.graph.instances.map(({ type, plugin }) => {
      let state: unknown;
      try {
        state = plugin.debugState?.();
      } catch (err) {
        state = { error: errText(err) };
      }
      return state === undefined ? { name: plugin.name, type } : { name: plugin.name, type, state };
    });
  }

  route(request: RouteRequest): RouteTicket {
    const clock = this.clock;
    const t0 = clock.nowMicros();
    const nowMs = clock.nowMs();
    const state: CycleState = { request, nowMs, rng: this.rng, scratch: new Map(), notes: [] };
    const input = this.snapshotCandidates(nowMs);
    const observed = this.events.size > 0;
    const timings: PluginTiming[] | undefined = observed ? [] : undefined;

    let run: ProfileRun;
    let profile: Profile;
    try {
      const th0 = timings !== undefined && this.handlerIsPlugin ? clock.nowMicros() : 0;
      profile = this.handler.pickProfile(state, this.profiles);
      if (timings !== undefined && this.handlerIsPlugin) timings.push({ plugin: this.handler.name, micros: clock.nowMicros() - th0 });
      run = runProfileTimed(profile, state, input, timings !== undefined ? clock : undefined, timings ?? NO_TIMINGS);
    } catch (err) {
      const error = RouterError.from(err);
      if (observed) this.events.emit({ kind: 'rejected', request, error });
      throw error;
    }

    const { candidates } = run;
    // A head of the order covers the chosen endpoint and every fallback unless a picker
    // returned fewer positions than it should (then the whole order is built).
    const order = run.fullOrder === undefined || run.order.length > this.fallbacks ? run.order : run.fullOrder();
    const chosenCandidate = candidates[order[0]!]!;
    const chosen = chosenCandidate.endpoint;
    const fallbacks: Endpoint[] = [];
    for (let k = 1; k < order.length && fallbacks.length < this.fallbacks; k++) fallbacks.push(candidates[order[k]!]!.endpoint);

    const { matchedBlocks, totalBlocks, matchedChars } = this.annotate(state, chosenCandidate);

    let disagg: DisaggDecision | undefined;
    let endMicros = observed ? run.endMicros : 0;
    if (this.handler.secondStage !== undefined) {
      try {
        disagg = this.handler.secondStage(
          state,
          { chosen: chosenCandidate, reason: run.reason, annotation: { matchedBlocks, totalBlocks, matchedChars } },
          this.profiles,
          (p) => this.runStage(p, state, input, timings),
        );
      } catch (err) {
        const error = RouterError.from(err);
        if (observed) this.events.emit({ kind: 'rejected', request, error });
        throw error;
      }
      endMicros = 0;
    }
    // Decision compute ends with the pick (steps 1–2); the score report is built on demand.
    const decisionMicros = Math.max(0, (endMicros > 0 ? endMicros : clock.nowMicros()) - t0);

    const decision = new ScoredDecision(
      {
        requestId: request.requestId,
        endpoint: chosen,
        fallbacks,
        strategy: this.strategy,
        profile: profile.name,
        reason: run.reason,
        matchedBlocks,
        totalBlocks,
        matchedChars,
        decisionMicros,
        ...(disagg !== undefined ? { disagg } : {}),
      },
      {
        candidates,
        order,
        ...(run.fullOrder !== undefined ? { fullOrder: run.fullOrder } : {}),
        scores: run.scores,
        totals: run.totals,
        scorerNames: this.scorerNames.get(profile)!,
      },
      state.notes.length > 0 ? [...state.notes] : undefined,
    );

    // A split request's prompt is computed on the prefill engine (its lease ends with the
    // prefill leg, at the first byte); the decode engine receives the KV.
    const prefill = disagg?.prefill;
    const lease = this.registry.inflight.acquire(chosen.index, prefill !== undefined ? 0 : request.promptTokens);
    const prefillLease =
      prefill !== undefined
        ? this.registry.inflight.acquire(prefill.index, Math.max(0, request.promptTokens - (disagg!.prefillCachedTokens ?? 0)))
        : undefined;
    // One clock read per hook boundary (only when someone observes the timings).
    let th = observed ? clock.nowMicros() : 0;
    for (const h of this.routedHooks) {
      try {
        h.onRouted(state, decision);
      } catch (err) {
        this.logger.warn('routed hook failed', { plugin: h.name, request_id: request.requestId, error: errText(err) });
      }
      if (timings !== undefined) {
        const end = clock.nowMicros();
        timings.push({ plugin: h.name, micros: end - th });
        th = end;
      }
    }
    if (timings !== undefined) this.events.emit({ kind: 'routed', request, decision, timings, routeMicros: Math.max(0, th - t0) });
    return new Ticket(this.ticketContext, request, decision, lease, nowMs, prefillLease);
  }

  /** What the annotators report about `chosen` (the first answer per field wins). */
  private annotate(state: CycleState, chosen: Candidate): { matchedBlocks: number; totalBlocks: number; matchedChars: number } {
    let matchedBlocks: number | undefined;
    let totalBlocks: number | undefined;
    let matchedChars: number | undefined;
    for (const a of this.annotators) {
      const n = a.annotate(state, chosen);
      if (n === undefined) continue;
      matchedBlocks ??= n.matchedBlocks;
      totalBlocks ??= n.totalBlocks;
      matchedChars ??= n.matchedChars;
    }
    return { matchedBlocks: matchedBlocks ?? 0, totalBlocks: totalBlocks ?? 0, matchedChars: matchedChars ?? 0 };
  }

  /** A second-stage run of `profile` over this cycle's candidates. */
  private runStage(profile: Profile, state: CycleState, input: readonly Candidate[], timings: PluginTiming[] | undefined): StagePick {
    const run = runProfileTimed(profile, state, input, timings !== undefined ? this.clock : undefined, timings ?? NO_TIMINGS);
    const chosen = run.candidates[run.order[0]!]!;
    return { chosen, reason: run.reason, annotation: this.annotate(state, chosen) };
  }

  /**
   * The candidates of this cycle: one reused Candidate per endpoint whose load is refilled
   * in place, all in one registry call (valid for this cycle only; the decision keeps nothing
   * but their endpoints). The array itself is reused too: nothing changes it (filters return
   * new arrays), and a membership change makes a new one, so a decision that keeps it for its
   * score report still reads the endpoints it was decided over.
   */
  private snapshotCandidates(nowMs: number): readonly Candidate[] {
    const all = this.registry.all();
    let pool = this.pool;
    // The registry's member list is a new frozen array on every change: same array, same pool.
    if (all !== this.poolOf) {
      if (!samePool(pool, all)) pool = this.pool = all.map((endpoint) => ({ endpoint, load: newLoadScratch() }));
      this.poolOf = all;
    }
    this.registry.loadAllInto(pool, nowMs);
    return pool;
  }
}

/** What every ticket of one scheduler shares (one object per scheduler, not per request). */
interface TicketContext {
  readonly registry: EndpointRegistry;
  readonly completedHooks: readonly CompletedHook[];
  readonly events: DecisionEmitter;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * A routed request's handle. A class with methods (one allocation per request) rather than
 * an object of closures over the route call's variables.
 */
class Ticket implements RouteTicket {
  readonly request: RouteRequest;
  readonly decision: RouteDecision;
  #ctx: TicketContext;
  #lease: InflightLease;
  /** The prefill engine's claim of a split request (released at the first byte). */
  #prefillLease: InflightLease | undefined;
  #decidedAtMs: number;
  #finished = false;

  constructor(
    ctx: TicketContext,
    request: RouteRequest,
    decision: RouteDecision,
    lease: InflightLease,
    decidedAtMs: number,
    prefillLease?: InflightLease,
  ) {
    this.request = request;
    this.decision = decision;
    this.#ctx = ctx;
    this.#lease = lease;
    this.#decidedAtMs = decidedAtMs;
    this.#prefillLease = prefillLease;
  }

  finish(outcome: RequestOutcome): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#lease.release();
    this.#prefillLease?.release();
    const { completedHooks, events, logger, registry } = this.#ctx;
    const { request, decision } = this;
    // An engine that left while this request ran has no state any more: its late outcome
    // must not recreate some (the accounting above is all that still applies).
    for (const h of registry.isMember(decision.endpoint) ? completedHooks : NO_HOOKS) {
      try {
        h.onCompleted(request, decision, outcome);
      } catch (err) {
        logger.warn('completed hook failed', { plugin: h.name, request_id: request.requestId, error: errText(err) });
      }
    }
    if (events.size > 0)
      events.emit({ kind: 'finished', request, decision, outcome, durationMs: this.#ctx.clock.nowMs() - this.#decidedAtMs });
  }

  /** Prefill accounting only (see inflight.ts): the request keeps its in-flight claim. */
  firstByte(): void {
    if (this.#finished) return;
    this.#prefillLease?.release();
    if (!this.#lease.firstByte()) return;
    const { completedHooks, logger, registry } = this.#ctx;
    const { request, decision } = this;
    if (!registry.isMember(decision.endpoint)) return;
    for (const h of completedHooks) {
      if (h.onFirstByte === undefined) continue;
      try {
        h.onFirstByte(request, decision);
      } catch (err) {
        logger.warn('first-byte hook failed', { plugin: h.name, request_id: request.requestId, error: errText(err) });
      }
    }
  }
}

const NO_HOOKS: readonly CompletedHook[] = [];

/** Timings sink when nobody observes (runProfileTimed appends only with a clock). */
const NO_TIMINGS: PluginTiming[] = [];

function samePool(pool: readonly { readonly endpoint: Endpoint }[], all: readonly Endpoint[]): boolean {
  if (pool.length !== all.length) return false;
  for (let i = 0; i < all.length; i++) if (pool[i]!.endpoint !== all[i]) return false;
  return true;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
