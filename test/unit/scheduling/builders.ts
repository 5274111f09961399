/** Fluent-ish builders shared by the scheduling and plugin unit tests. */
import { defaultConfig, type DeepPartial } from '../../../src/config/default-config.js';
import type { RouterConfig } from '../../../src/config/types.js';
import type { Endpoint, RouteRequest } from '../../../src/core/types.js';
import { IDLE_LOAD, type LoadSnapshot } from '../../../src/endpoints/load.js';
import type { Candidate, CycleState } from '../../../src/scheduling/types.js';
import { seededRng, type Rng } from '../../../src/util/rng.js';

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
export function config(n: number, over: DeepPartial<RouterConfig> = {}): RouterConfig {
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
