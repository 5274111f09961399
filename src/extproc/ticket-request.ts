/**
 * Getting a routed request's ticket: from the router at once, or through admission control,
 * which may hold the request until an engine has room (then the ticket, or the refusal,
 * comes later). A held request is withdrawn when its stream ends first (the abort signal
 * takes it out of admission's queue), and a ticket granted after that is given back at once:
 * the slot must not stay taken by a request nobody will answer.
 */
import type { AdmissionService, RouteTicket, RoutingService } from '../core/routing-service.js';
import type { RouteDecision, RouteRequest } from '../core/types.js';
import type { LogFields } from '../logging/logger.js';

/** What becomes of a held request. */
export interface HeldCallbacks {
  /** Admitted: the request was routed. */
  granted(ticket: RouteTicket): void;
  /** Refused by admission control. */
  refused(err: unknown): void;
}

/** A request admission control holds; its answer arrives through the callbacks unless withdrawn. */
export class HeldRequest {
  private active = true;

  constructor(
    result: Promise<RouteTicket>,
    private readonly abort: AbortController,
    cb: HeldCallbacks,
  ) {
    result.then(
      (ticket) => {
        if (!this.active) return ticket.finish({ aborted: true });
        this.active = false;
        cb.granted(ticket);
      },
      (err: unknown) => {
        if (!this.active) return;
        this.active = false;
        cb.refused(err);
      },
    );
  }

  /** The stream ended: withdraw the request (no callback follows). Idempotent. */
  withdraw(): void {
    if (!this.active) return;
    this.active = false;
    this.abort.abort();
  }
}

/**
 * Routes `request`, through `admission` when given: the ticket now, or the held request.
 * @throws what route/admit throw synchronously (RouterError NO_ENDPOINT, OVERLOADED, …).
 */
export function requestTicket(
  routing: RoutingService,
  admission: AdmissionService | undefined,
  request: RouteRequest,
  cb: HeldCallbacks,
): RouteTicket | HeldRequest {
  if (admission === undefined) return routing.route(request);
  const abort = new AbortController();
  const result = admission.admit(request, abort.signal);
  return result instanceof Promise ? new HeldRequest(result, abort, cb) : result;
}

/** A granted decision as a debug log line's fields (no prompt data). */
export function routedLogFields(d: RouteDecision): LogFields {
  return {
    endpoint: d.endpoint.id,
    fallbacks: d.fallbacks.length,
    strategy: d.strategy,
    reason: d.reason,
    matched_blocks: d.matchedBlocks,
    total_blocks: d.totalBlocks,
    decision_us: d.decisionMicros,
  };
}
