/**
 * The contract between the protocol edge (src/extproc/) and the scheduling core.
 * The edge builds a RouteRequest, asks for a decision, and reports exactly once how the
 * request ended. Everything else (strategies, indexes, load signals) hides behind this.
 */
import type { RequestOutcome, RouteDecision, RouteRequest } from './types.js';

/** A routed request in flight. `finish` is idempotent: only the first call counts. */
export interface RouteTicket {
  readonly request: RouteRequest;
  readonly decision: RouteDecision;
  finish(outcome: RequestOutcome): void;
  /**
   * The engine's first response byte reached the edge — for a streamed answer its first
   * token, so its prefill is done. Idempotent, ignored after `finish`. Optional: an edge
   * that cannot see response bodies never calls it, and the core then counts the request
   * as prefilling until it finishes.
   */
  firstByte?(): void;
}

export interface RoutingService {
  /**
   * Chooses an endpoint and registers the request as in flight on it.
   * @throws RouterError with code NO_ENDPOINT when nothing is eligible.
   */
  route(request: RouteRequest): RouteTicket;
}

/**
 * Admission in front of routing: decides at once (a ticket), holds the request until an
 * engine has room (a promise), or refuses it (RouterError OVERLOADED, thrown or rejected).
 * Aborting `signal` (the stream ended) withdraws a held request; its promise then rejects
 * and nothing was routed.
 */
export interface AdmissionService {
  admit(request: RouteRequest, signal: AbortSignal): RouteTicket | Promise<RouteTicket>;
}
