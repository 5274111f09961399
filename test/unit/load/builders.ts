/** Small builders for load-plugin tests: endpoints, candidates with loads, cycle states. */
import type { Endpoint, RouteDecision, RouteRequest } from '../../../src/core/types.js';
import type { LoadSnapshot } from '../../../src/endpoints/load.js';
import type { Candidate, CycleState } from '../../../src/scheduling/types.js';
import type { Rng } from '../../../src/util/rng.js';
import { seededRng } from '../../../src/util/rng.js';

export function endpoint(i: number): Endpoint {
  return { id: `10.0.0.${i + 1}:8000`, address: `10.0.0.${i + 1}`, port: 8000, pool: 'default', models: [], index: i };
}

export function load(inflight: number, extra: Partial<LoadSnapshot> = {}): LoadSnapshot {
  return {
    inflightRequests: inflight,
    inflightPromptTokens: inflight * 100,
    pendingTokens: inflight * 100,
    metricsAgeMs: Number.POSITIVE_INFINITY,
    healthy: true,
    ...extra,
  };
}

export function candidates(loads: readonly (number | LoadSnapshot)[]): Candidate[] {
  return loads.map((l, i) => ({ endpoint: endpoint(i), load: typeof l === 'number' ? load(l) : l }));
}

export function request(over: Partial<RouteRequest> = {}): RouteRequest {
  const prefix = over.prefix ?? 'system: you are a helpful assistant. '.repeat(10);
  return {
    requestId: 'r',
    model: 'm',
    prefix,
    promptChars: prefix.length,
    promptTokens: Math.ceil(prefix.length / 4),
    stream: false,
    arrivalMs: 0,
    ...over,
  };
}

export function state(req: RouteRequest = request(), nowMs = 0, rng: Rng = seededRng(1)): CycleState {
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
