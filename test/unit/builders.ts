/** The builders shared by the unit tests of scheduling, plugins, presets and the data layer. */
import { defaultConfig, type ConfigOverrides } from '../../src/config/default-config.js';
import type { RouterConfig } from '../../src/config/types.js';
import type { CandidateScore, Endpoint, RouteDecision, RouteRequest } from '../../src/core/types.js';
import { IDLE_LOAD, type LoadSnapshot } from '../../src/endpoints/load.js';
import { NO_SIGNALS } from '../../src/framework/signal-view.js';
import { EndpointRegistry } from '../../src/endpoints/registry.js';
import { silentLogger } from '../../src/logging/logger.js';
import { definePlugin, type PluginType } from '../../src/framework/plugin-api.js';
import type { GraphHandle } from '../../src/scheduling/plugin-graph.js';
import type { Candidate, CycleState, Plugin } from '../../src/framework/types.js';
import { ManualClock } from '../../src/util/clock.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { section } from '../../src/util/schema.js';
import { staticEndpointSpecs } from '../../src/endpoints/endpoint-config.js';

export function endpoint(index: number, over: Partial<Omit<Endpoint, 'index'>> = {}): Endpoint {
  return {
    id: `10.0.0.${index + 1}:8000`,
    address: `10.0.0.${index + 1}`,
    port: 8000,
    pool: 'default',
    models: [],
    ...over,
    index,
  };
}

export function load(over: Partial<LoadSnapshot> = {}): LoadSnapshot {
  return { ...IDLE_LOAD, ...over };
}

export function candidate(index: number, l: Partial<LoadSnapshot> = {}, ep: Partial<Omit<Endpoint, 'index'>> = {}): Candidate {
  return { endpoint: endpoint(index, ep), load: load(l) };
}

/** Candidates 0..n-1 with the given in-flight counts (or idle). */
export function candidates(n: number, inflight: readonly number[] = []): Candidate[] {
  return Array.from({ length: n }, (_, i) => candidate(i, { inflightRequests: inflight[i] ?? 0 }));
}

let reqSeq = 0;
export function request(over: Partial<RouteRequest> = {}): RouteRequest {
  const prefix = over.prefix ?? '';
  return {
    requestId: over.requestId ?? `req-${++reqSeq}`,
    model: 'm',
    prefix,
    promptChars: prefix.length,
    promptTokens: Math.ceil(prefix.length / 4),
    stream: false,
    arrivalMs: 0,
    ...over,
  };
}

export function cycle(req: Partial<RouteRequest> = {}, rng: Rng = seededRng(1)): CycleState {
  return { request: request(req), nowMs: 0, rng, scratch: new Map(), notes: [] };
}

/** Endpoint addresses 127.0.0.1:9001.. for n endpoints. */
export function addresses(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `127.0.0.1:${9001 + i}`);
}

/** A validated config with `n` endpoints and the given overrides. */
export function config(n: number, over: ConfigOverrides = {}): RouterConfig {
  return defaultConfig({ endpoints: addresses(n).map((address) => ({ address })), ...over });
}

/** Deterministic pseudo-random text of `len` chars from a seed (letters and spaces). */
export function text(seed: number, len: number): string {
  const rng = seededRng(seed);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz     ';
  let s = '';
  for (let i = 0; i < len; i++) s += alphabet[rng.int(alphabet.length)];
  return s;
}

/** A plugin type without parameters whose instances `make` builds (tests of the framework). */
export function fakeType(type: string, make: (name: string) => Plugin): PluginType {
  return definePlugin({ type, description: `test plugin ${type}`, parameters: section({}), create: (name) => make(name) });
}

/** The handle parts a graph builder needs, over `n` endpoints (or the given registry). */
export function graphHandle(n = 2, registry?: EndpointRegistry): GraphHandle {
  const clock = new ManualClock(0);
  const reg = registry ?? new EndpointRegistry(staticEndpointSpecs(config(n).endpoints), clock);
  const services = new Map<string, unknown>();
  return {
    endpoints: reg,
    clock,
    rng: seededRng(1),
    logger: silentLogger,
    signals: NO_SIGNALS,
    shared: <T>(key: { id: string }, create: () => T): T => {
      if (!services.has(key.id)) services.set(key.id, create());
      return services.get(key.id) as T;
    },
  };
}

// --- load-oriented builders (loads by in-flight count, chat-like requests) ---

export function loaded(inflight: number, extra: Partial<LoadSnapshot> = {}): LoadSnapshot {
  return {
    inflightRequests: inflight,
    inflightPromptTokens: inflight * 100,
    pendingTokens: inflight * 100,
    metricsAgeMs: Number.POSITIVE_INFINITY,
    healthy: true,
    ...extra,
  };
}

export function loadedCandidates(loads: readonly (number | LoadSnapshot)[]): Candidate[] {
  return loads.map((l, i) => ({ endpoint: endpoint(i), load: typeof l === 'number' ? loaded(l) : l }));
}

/** A request with a 370-character system-prompt prefix (and id `r`) unless given. */
export function chatRequest(over: Partial<RouteRequest> = {}): RouteRequest {
  return request({ requestId: 'r', prefix: 'system: you are a helpful assistant. '.repeat(10), ...over });
}

export function state(req: RouteRequest = chatRequest(), nowMs = 0, rng: Rng = seededRng(1)): CycleState {
  return { request: req, nowMs, rng, scratch: new Map(), notes: [] };
}

export function decision(req: RouteRequest, ep: Endpoint): RouteDecision {
  return {
    requestId: req.requestId,
    endpoint: ep,
    fallbacks: [],
    strategy: 'test',
    reason: 'load',
    matchedBlocks: 0,
    totalBlocks: 0,
    candidates: [],
    decisionMicros: 0,
  };
}

/** A least-loaded picker (random among ties) over the candidates a filter left, like a profile's picker. */
export function leastLoaded(left: readonly Candidate[], rng: Rng): Candidate {
  let best = Infinity;
  let ties: Candidate[] = [];
  for (const c of left) {
    const l = c.load.inflightRequests;
    if (l < best) [best, ties] = [l, [c]];
    else if (l === best) ties.push(c);
  }
  return ties[rng.int(ties.length)]!;
}

// --- decisions as telemetry sees them (loopback endpoints, a secret prompt) ---

/** An endpoint on 127.0.0.1 (port 8001 + index unless given), as the telemetry tests use. */
export function loopbackEndpoint(index: number, port = 8001 + index): Endpoint {
  return { id: `127.0.0.1:${port}`, address: '127.0.0.1', port, pool: 'default', models: [], index };
}

/** A prompt that must never appear in logs, metrics or spans. */
export const SECRET_PROMPT = 'You are Zorblax, the TOP-SECRET assistant. Password: hunter2-xyzzy';

/** A request whose prefix is SECRET_PROMPT. */
export function secretRequest(over: Partial<RouteRequest> = {}): RouteRequest {
  return {
    requestId: 'req-1',
    model: 'llama-3-8b',
    prefix: SECRET_PROMPT,
    promptChars: SECRET_PROMPT.length,
    promptTokens: 400,
    stream: false,
    arrivalMs: 0,
    ...over,
  };
}

export function scoredCandidate(ep: Endpoint, prefix: number, queue: number, weights = { prefix: 3, queue: 2 }): CandidateScore {
  return { endpointId: ep.id, scores: { prefix, queue }, total: prefix * weights.prefix + queue * weights.queue };
}

/** A cache-aware decision over three loopback endpoints. */
export function sampleDecision(over: Partial<RouteDecision> = {}): RouteDecision {
  const eps = [loopbackEndpoint(0), loopbackEndpoint(1), loopbackEndpoint(2)];
  const [e0, e1, e2] = eps as [Endpoint, Endpoint, Endpoint];
  return {
    requestId: 'req-1',
    endpoint: e0,
    fallbacks: [e1, e2],
    strategy: 'cache-aware',
    reason: 'affinity',
    matchedBlocks: 12,
    totalBlocks: 14,
    candidates: [scoredCandidate(e0, 12 / 14, 0.5), scoredCandidate(e1, 0, 1), scoredCandidate(e2, 0.25, 0.25)],
    decisionMicros: 42,
    notes: ['imbalance check passed'],
    ...over,
  };
}
