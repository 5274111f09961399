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
}

export interface RoutingService {
  /**
   * Chooses an endpoint and registers the request as in flight on it.
   * @throws RouterError with code NO_ENDPOINT when nothing is eligible.
   */
  route(request: RouteRequest): RouteTicket;
}
