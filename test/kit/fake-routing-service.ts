/**
 * A RoutingService fake for edge tests: picks endpoints round-robin among the eligible
 * ones (all, or the subset hint), records every request and outcome, and keeps exact
 * in-flight accounting so tests can assert that every ticket is finished exactly once.
 */
import { RouterError } from '../../src/core/errors.js';
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../src/core/types.js';
import type { RouteTicket, RoutingService } from '../../src/core/routing-service.js';

export function testEndpoint(id: string, index: number, pool = 'default'): Endpoint {
  const colon = id.lastIndexOf(':');
  return { id, address: id.slice(0, colon), port: Number(id.slice(colon + 1)), pool, models: [], index };
}

export interface FinishedRecord {
  readonly request: RouteRequest;
  readonly decision: RouteDecision;
  readonly outcome: RequestOutcome;
}

export class FakeRoutingService implements RoutingService {
  readonly endpoints: Endpoint[];
  readonly requests: RouteRequest[] = [];
  readonly finished: FinishedRecord[] = [];
  /** finish() calls including repeated ones (must equal finished.length + ignored repeats). */
  finishCalls = 0;
  inflight = 0;
  /** firstByte() calls that counted (the first per ticket, before it finished). */
  firstBytes = 0;
  /** When set, route() throws it. */
  failWith: RouterError | undefined;
  private next = 0;

  constructor(
    ids: readonly string[] = ['10.0.0.1:8000', '10.0.0.2:8000', '10.0.0.3:8000'],
    private readonly fallbacks = 1,
  ) {
    this.endpoints = ids.map((id, i) => testEndpoint(id, i));
  }

  route(request: RouteRequest): RouteTicket {
    this.requests.push(request);
    if (this.failWith) throw this.failWith;
    const eligible = request.subset ? this.endpoints.filter((e) => request.subset!.includes(e.id)) : this.endpoints;
    if (eligible.length === 0) throw new RouterError('NO_ENDPOINT', 'no eligible endpoint');
    const start = this.next++ % eligible.length;
    const order = eligible.map((_, i) => eligible[(start + i) % eligible.length]!);
    const decision: RouteDecision = {
      requestId: request.requestId,
      endpoint: order[0]!,
      fallbacks: order.slice(1, 1 + this.fallbacks),
      strategy: 'fake',
      reason: 'round-robin',
      matchedBlocks: 0,
      totalBlocks: 0,
      candidates: [],
      decisionMicros: 1,
    };
    this.inflight++;
    let done = false;
    let firstByteSeen = false;
    return {
      request,
      decision,
      firstByte: () => {
        if (done || firstByteSeen) return;
        firstByteSeen = true;
        this.firstBytes++;
      },
      finish: (outcome: RequestOutcome) => {
        this.finishCalls++;
        if (done) return;
        done = true;
        this.inflight--;
        this.finished.push({ request, decision, outcome });
      },
    };
  }
}
