/**
 * What the scheduler tells observers (telemetry, the explain endpoint, benchmarks) about
 * every decision and outcome, so they can watch without the core depending on them.
 *
 * Listeners run synchronously on the request path: keep them cheap. A listener that throws
 * is reported to the logger and otherwise ignored; it never fails a request.
 */
import type { RouterError } from '../core/errors.js';
import type { RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import type { Logger } from '../logging/logger.js';
import type { PluginTiming } from './profile-runner.js';

export interface RoutedEvent {
  readonly kind: 'routed';
  readonly request: RouteRequest;
  readonly decision: RouteDecision;
  /** Per-plugin call time in µs (filters, scorers, picker, routed hooks). */
  readonly timings: readonly PluginTiming[];
  /** Whole `route` call in µs, including routed hooks (decisionMicros stops at the pick). */
  readonly routeMicros: number;
}

export interface FinishedEvent {
  readonly kind: 'finished';
  readonly request: RouteRequest;
  readonly decision: RouteDecision;
  readonly outcome: RequestOutcome;
  /** Router-clock ms between the decision and `finish`. */
  readonly durationMs: number;
}

export interface RejectedEvent {
  readonly kind: 'rejected';
  readonly request: RouteRequest;
  readonly error: RouterError;
}

export type DecisionEvent = RoutedEvent | FinishedEvent | RejectedEvent;
export type DecisionListener = (event: DecisionEvent) => void;

/** A set of listeners with error isolation. */
export class DecisionEmitter {
  private readonly listeners = new Set<DecisionListener>();

  constructor(private readonly logger: Logger) {}

  /** Subscribes; returns the unsubscribe function. */
  subscribe(listener: DecisionListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  get size(): number {
    return this.listeners.size;
  }

  emit(event: DecisionEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch (err) {
        this.logger.warn('decision listener failed', {
          event: event.kind,
          request_id: event.request.requestId,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }
}
