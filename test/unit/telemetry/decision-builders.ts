/** Small builders for telemetry tests: endpoints, requests and decisions with sane defaults. */
import type { CandidateScore, Endpoint, RouteDecision, RouteRequest } from '../../../src/core/types.js';

export function endpoint(index: number, port = 8001 + index): Endpoint {
  return { id: `127.0.0.1:${port}`, address: '127.0.0.1', port, pool: 'default', models: [], index };
}

export const SECRET_PROMPT = 'You are Zorblax, the TOP-SECRET assistant. Password: hunter2-xyzzy';

export function request(over: Partial<RouteRequest> = {}): RouteRequest {
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

export function candidate(ep: Endpoint, prefix: number, queue: number, weights = { prefix: 3, queue: 2 }): CandidateScore {
  return { endpointId: ep.id, scores: { prefix, queue }, total: prefix * weights.prefix + queue * weights.queue };
}

export function decision(over: Partial<RouteDecision> = {}): RouteDecision {
  const eps = [endpoint(0), endpoint(1), endpoint(2)];
  const [e0, e1, e2] = eps as [Endpoint, Endpoint, Endpoint];
  return {
    requestId: 'req-1',
    endpoint: e0,
    fallbacks: [e1, e2],
    strategy: 'cache-aware',
    reason: 'affinity',
    matchedBlocks: 12,
    totalBlocks: 14,
    candidates: [candidate(e0, 12 / 14, 0.5), candidate(e1, 0, 1), candidate(e2, 0.25, 0.25)],
    decisionMicros: 42,
    notes: ['imbalance check passed'],
    ...over,
  };
}
