/**
 * Session stickiness by an explicit key (the value of the request header named by the
 * `header` parameter; a caller without headers, such as the fleet simulator, gives the key
 * as `RouteRequest.sessionKey`): the engine a session was last routed to scores 1, every
 * other engine 0, so with a dominant weight the session stays where its conversation's KV
 * cache is — until that engine is overloaded. The key is published for the cycle
 * (`cycleSessionKey`), so cold placement treats a session request as warm.
 *
 * Why explicit keys: multi-turn and agentic clients re-send a growing prefix; the prefix
 * index usually finds the same engine, but an explicit key survives index eviction, prompt
 * rewriting by the client and router restarts of the index. Why yield to load: a sticky
 * session must not keep feeding an engine that is already the pool's hotspot.
 *
 * Rules:
 *  - No session key, unknown or expired session, or sticky engine not a candidate: all 0
 *    (neutral: other scorers decide).
 *  - Overloaded: the sticky engine's load exceeds the least loaded candidate's by more
 *    than overloadAbs AND is more than overloadRel × that (the SGLang imbalance rule, in
 *    the configured unit): all 0, note "session yielded to load", and the session moves
 *    to wherever it is routed now.
 *  - Else the sticky engine scores 1 and the reason hint is `session`.
 *  - After every routed request with a key, the binding is (re)set to the chosen engine
 *    with a fresh TTL (sliding expiry). At most maxSessions bindings are kept (LRU).
 */
import type { Endpoint, RouteDecision } from '../../core/types.js';
import { loadIn, type LoadMeasure } from '../../endpoints/load.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, EndpointsChangedHook, RoutedHook, Scorer } from '../../framework/types.js';
import { int, num, section } from '../../util/schema.js';
import { headerName } from '../../util/schema-checks.js';
import { SESSION_KEY } from '../shared/cycle-keys.js';
import { setScratch } from '../../framework/cycle-scratch.js';
import { loadAwareParams, withLoadMeasure } from '../shared/params.js';

export interface SessionAffinityOptions extends LoadMeasure {
  /** Lower-case name of the header carrying the session key (absent: `RouteRequest.sessionKey` only). */
  readonly header?: string | undefined;
  /** Idle time after which a binding expires (default 300 s, as llm-d's session_id mode). */
  readonly ttlMs: number;
  /** At most this many bindings (default 100 000). */
  readonly maxSessions: number;
  /** Yield when sticky load − min load > overloadAbs ... (default 8 requests). */
  readonly overloadAbs: number;
  /** ... and sticky load > overloadRel × min load (default 1.5). */
  readonly overloadRel: number;
}

export interface SessionStats {
  readonly sessions: number;
  readonly stuck: number;
  readonly yielded: number;
  readonly expired: number;
}

interface Binding {
  endpointId: string;
  expiresAtMs: number;
}

export class SessionAffinityScorer implements Scorer, RoutedHook, EndpointsChangedHook {
  private readonly bindings = new Map<string, Binding>();
  private stuck = 0;
  private yielded = 0;
  private expired = 0;

  constructor(
    readonly name: string,
    private readonly opts: SessionAffinityOptions,
  ) {}

  score(state: CycleState, candidates: readonly Candidate[]): Float64Array {
    const out = new Float64Array(candidates.length);
    const key = this.keyOf(state);
    if (key === undefined || key === '') return out;
    setScratch(state, SESSION_KEY, key);
    const b = this.bindings.get(key);
    if (b === undefined) return out;
    if (b.expiresAtMs < state.nowMs) {
      this.bindings.delete(key);
      this.expired++;
      return out;
    }
    const s = candidates.findIndex((c) => c.endpoint.id === b.endpointId);
    if (s < 0) return out;
    const sticky = loadIn(this.opts, candidates[s]!.load);
    let min = Number.POSITIVE_INFINITY;
    for (const c of candidates) min = Math.min(min, loadIn(this.opts, c.load));
    if (sticky - min > this.opts.overloadAbs && sticky > this.opts.overloadRel * min) {
      this.yielded++;
      state.notes.push('session yielded to load');
      return out;
    }
    this.stuck++;
    out[s] = 1;
    state.reasonHint = 'session';
    return out;
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const key = this.keyOf(state);
    if (key === undefined || key === '') return;
    this.bindings.delete(key);
    this.bindings.set(key, { endpointId: decision.endpoint.id, expiresAtMs: state.nowMs + this.opts.ttlMs });
    while (this.bindings.size > this.opts.maxSessions) {
      const oldest = this.bindings.keys().next();
      if (oldest.done) break;
      this.bindings.delete(oldest.value);
    }
  }

  private keyOf(state: CycleState): string | undefined {
    const h = this.opts.header;
    return (h !== undefined ? state.request.headers?.get(h) : undefined) ?? state.request.sessionKey;
  }

  /** Bindings to engines that left are dropped (the session starts over elsewhere). */
  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    const live = new Set(endpoints.map((e) => e.id));
    for (const [key, b] of this.bindings) if (!live.has(b.endpointId)) this.bindings.delete(key);
  }

  /** The endpoint a session is bound to, if any (tests, explain). */
  boundTo(sessionKey: string): string | undefined {
    return this.bindings.get(sessionKey)?.endpointId;
  }

  debugState(): SessionStats {
    return this.stats();
  }

  stats(): SessionStats {
    return { sessions: this.bindings.size, stuck: this.stuck, yielded: this.yielded, expired: this.expired };
  }
}

export const SESSION_AFFINITY_SCORER = 'session-affinity-scorer';

/** Five minutes idle, as llm-d's session_id binding. */
export const DEFAULT_SESSION_TTL_MS = 300_000;
export const DEFAULT_SESSION_MAX = 100_000;
export const DEFAULT_SESSION_OVERLOAD_ABS = 8;
export const DEFAULT_SESSION_OVERLOAD_REL = 1.5;

export const SESSION_KNOBS = {
  header: headerName.optional().describe('Request header whose value is the session key (any case; e.g. x-session-id).'),
  ttlMs: int({ min: 1, max: 86_400_000 }).default(DEFAULT_SESSION_TTL_MS).describe('Idle time after which a binding expires.'),
  maxSessions: int({ min: 1, max: 100_000_000 }).default(DEFAULT_SESSION_MAX).describe('At most this many bindings (LRU).'),
  overloadAbs: num({ min: 0, max: 1_000_000 })
    .default(DEFAULT_SESSION_OVERLOAD_ABS)
    .describe('Yield when the sticky load exceeds the least loaded by more than this...'),
  overloadRel: num({ min: 1, max: 1000 }).default(DEFAULT_SESSION_OVERLOAD_REL).describe('...and is more than this many times it.'),
};

export const sessionAffinityScorer = definePlugin({
  type: SESSION_AFFINITY_SCORER,
  description:
    "Session stickiness by the request's session key (the header named by `header`): the engine the session last went to scores 1, others 0, until that engine is overloaded against the least loaded.",
  parameters: section({
    ...SESSION_KNOBS,
    ...loadAwareParams,
  }),
  create: (name, p, handle) => new SessionAffinityScorer(name, withLoadMeasure(p, handle)),
});
