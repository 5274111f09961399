/**
 * The scheduler: the RoutingService the ext_proc edge calls. Per request it snapshots the
 * load of every endpoint, runs the strategy's profile (filters → weighted scorers → picker),
 * builds the RouteDecision (chosen endpoint + ordered fallbacks + per-candidate scores),
 * counts the request as in flight on the chosen endpoint, runs the routed hooks (e.g. the
 * prefix index learns the request's blocks) and returns a ticket whose first `finish`
 * releases the accounting and runs the completed hooks.
 *
 * Everything is synchronous: a decision is pure CPU work on in-memory state, so there is no
 * interleaving between the match, the pick and the index update of one request.
 */
import type { RouterConfig } from '../config/types.js';
import { RouterError } from '../core/errors.js';
import type { RoutingService, RouteTicket } from '../core/routing-service.js';
import type { CandidateScore, Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { Logger } from '../telemetry/logger.js';
import type { Clock } from '../util/clock.js';
import type { Rng } from '../util/rng.js';
import { AFFINITY_EVIDENCE, cycleBlockHashes, getScratch } from './cycle-scratch.js';
import { DecisionEmitter, type DecisionListener } from './decision-events.js';
import type { ServiceKey } from './plugin-registry.js';
import type { PluginTiming } from './profile-runner.js';
import { runProfile } from './profile-runner.js';
import { isEndpointsChangedHook, type BuiltProfile, type LifecyclePlugin } from './profile-spec.js';
import type { Candidate, CycleState, Profile } from './types.js';

export interface SchedulerOptions {
  readonly config: RouterConfig;
  readonly registry: EndpointRegistry;
  readonly built: BuiltProfile;
  readonly clock: Clock;
  readonly rng: Rng;
  readonly logger: Logger;
  /** Per-scheduler shared services created by plugin factories. */
  readonly services: ReadonlyMap<string, unknown>;
}

type State = 'new' | 'started' | 'stopped';

export class Scheduler implements RoutingService {
  readonly registry: EndpointRegistry;
  readonly profile: Profile;
  private readonly plugins: readonly LifecyclePlugin[];
  private readonly clock: Clock;
  private readonly rng: Rng;
  private readonly logger: Logger;
  private readonly fallbacks: number;
  private readonly events: DecisionEmitter;
  private readonly services: ReadonlyMap<string, unknown>;
  private readonly abort = new AbortController();
  private readonly scorerNames: readonly string[];
  /** Per-plugin timer for runProfile, allocated once. */
  private readonly timer = (): number => this.clock.nowMicros();
  private state: State = 'new';

  constructor(opts: SchedulerOptions) {
    this.registry = opts.registry;
    this.profile = opts.built.profile;
    this.plugins = opts.built.plugins;
    this.clock = opts.clock;
    this.rng = opts.rng;
    this.logger = opts.logger;
    this.services = opts.services;
    this.fallbacks = Math.max(0, Math.floor(opts.config.fallbacks));
    this.events = new DecisionEmitter(opts.logger);
    this.scorerNames = this.profile.scorers.map((s) => s.scorer.name);
    const all = this.registry.all();
    for (const p of this.plugins) if (isEndpointsChangedHook(p)) p.onEndpointsChanged(all);
  }

  /** Strategy (profile) name, as reported in decisions. */
  get strategy(): string {
    return this.profile.name;
  }

  /**
   * Starts plugins with background work (they get an AbortSignal that fires on stop).
   * Idempotent; a stopped scheduler does not restart. Synchronous: plugins start their
   * own async loops and own their errors.
   */
  start(): void {
    if (this.state !== 'new') return;
    this.state = 'started';
    for (const p of this.plugins) {
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
    for (const p of this.plugins) {
      if (p.stop === undefined) continue;
      try {
        p.stop();
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

  /** A shared service a plugin created (e.g. the prefix index), if this profile has it. */
  service<T>(key: ServiceKey<T>): T | undefined {
    return this.services.get(key.id) as T | undefined;
  }

  route(request: RouteRequest): RouteTicket {
    const t0 = this.clock.nowMicros();
    const nowMs = this.clock.nowMs();
    const state: CycleState = { request, nowMs, rng: this.rng, scratch: new Map(), notes: [] };
    const all = this.registry.all();
    const input = new Array<Candidate>(all.length);
    for (let i = 0; i < all.length; i++) {
      const endpoint = all[i]!;
      input[i] = { endpoint, load: this.registry.loadOf(endpoint, nowMs) };
    }

    let run: ReturnType<typeof runProfile>;
    try {
      run = runProfile(this.profile, state, input, this.timer);
    } catch (err) {
      const error = RouterError.from(err);
      this.events.emit({ kind: 'rejected', request, error });
      throw error;
    }

    const { candidates, order, scores } = run;
    const chosen = candidates[order[0]!]!.endpoint;
    const fallbacks: Endpoint[] = [];
    for (let k = 1; k < order.length && fallbacks.length < this.fallbacks; k++) fallbacks.push(candidates[order[k]!]!.endpoint);
    // Decision compute ends with the pick (steps 1–2); the score report below describes it.
    const decisionMicros = Math.max(0, this.clock.nowMicros() - t0);

    const scorerNames = this.scorerNames;
    const candidateScores: CandidateScore[] = order.map((pos) => {
      const rec: Record<string, number> = {};
      for (let s = 0; s < scorerNames.length; s++) rec[scorerNames[s]!] = scores[s]![pos]!;
      return { endpointId: candidates[pos]!.endpoint.id, scores: rec, total: run.totals[pos]! };
    });

    const evidence = getScratch(state, AFFINITY_EVIDENCE);
    const totalBlocks = evidence?.totalBlocks ?? cycleBlockHashes(state)?.count ?? 0;
    const matchedBlocks = evidence !== undefined ? (evidence.matchedByEndpoint[chosen.index] ?? 0) : 0;

    const decision: RouteDecision = {
      requestId: request.requestId,
      endpoint: chosen,
      fallbacks,
      strategy: this.profile.name,
      reason: run.reason,
      matchedBlocks,
      totalBlocks,
      candidates: candidateScores,
      decisionMicros,
      ...(state.notes.length > 0 ? { notes: [...state.notes] } : {}),
    };

    const lease = this.registry.inflight.acquire(chosen.index, request.promptTokens);
    const timings: PluginTiming[] = [...run.timings];
    // One clock read per hook boundary: each hook's end is the next one's start.
    let th = this.clock.nowMicros();
    for (const h of this.profile.routedHooks) {
      try {
        h.onRouted(state, decision);
      } catch (err) {
        this.logger.warn('routed hook failed', { plugin: h.name, request_id: request.requestId, error: errText(err) });
      }
      const end = this.clock.nowMicros();
      timings.push({ plugin: h.name, micros: end - th });
      th = end;
    }
    this.events.emit({ kind: 'routed', request, decision, timings, routeMicros: Math.max(0, th - t0) });

    const decidedAtMs = nowMs;
    let finished = false;
    const finish = (outcome: RequestOutcome): void => {
      if (finished) return;
      finished = true;
      lease.release();
      for (const h of this.profile.completedHooks) {
        try {
          h.onCompleted(request, decision, outcome);
        } catch (err) {
          this.logger.warn('completed hook failed', { plugin: h.name, request_id: request.requestId, error: errText(err) });
        }
      }
      this.events.emit({ kind: 'finished', request, decision, outcome, durationMs: this.clock.nowMs() - decidedAtMs });
    };
    // Prefill accounting only (see inflight.ts): the request keeps its in-flight claim.
    const firstByte = (): void => {
      if (finished || !lease.firstByte()) return;
      for (const h of this.profile.completedHooks) {
        if (h.onFirstByte === undefined) continue;
        try {
          h.onFirstByte(request, decision);
        } catch (err) {
          this.logger.warn('first-byte hook failed', { plugin: h.name, request_id: request.requestId, error: errText(err) });
        }
      }
    };
    return { request, decision, finish, firstByte };
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
