/**
 * The types the composition root shares with its instrumentation hook: what the app needs
 * from a scheduler, the parts a hook may observe, and what the hook returns.
 */
import type { AdminServer } from '../admin/admin-server.js';
import type { RouterConfig } from '../config/types.js';
import type { Endpoint } from '../core/types.js';
import type { RoutingService } from '../core/routing-service.js';
import type { DiscoveryView } from '../discovery/discovery-metrics.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { EdgeStats } from '../extproc/edge-stats.js';
import type { PendingResponsesView } from '../extproc/pending-responses-metrics.js';
import type { Logger } from '../logging/logger.js';
import type { ReplicationView } from '../replication/replication-metrics.js';
import type { Clock } from '../util/clock.js';

/** What the app needs from the scheduler (src/compose/create-scheduler.ts). */
export interface AppScheduler extends RoutingService {
  start(): void;
  stop(): void;
  endpoints(): readonly Endpoint[];
  /** The member set discovery keeps current (absent on test doubles). */
  readonly registry?: EndpointRegistry;
}

/** The parts an instrumentation hook may observe or wrap. */
export interface AppParts {
  readonly config: RouterConfig;
  readonly scheduler: AppScheduler;
  readonly admin: AdminServer;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Endpoint discovery and config reload status (when the app runs discovery). */
  readonly discovery?: DiscoveryView;
  /** Replica state sharing (when `replication.enabled`). */
  readonly replication?: ReplicationView;
  /** Tickets waiting for Envoy's access log (when `server.responseCompletion` is access-log). */
  readonly pendingResponses?: PendingResponsesView;
}

/**
 * Returned by an instrumentation hook (telemetry): an optional decorated RoutingService
 * (decision spans, metrics), an EdgeStats sink, and cleanup run at stop.
 */
export interface Instrumentation {
  readonly routing?: RoutingService;
  readonly edgeStats?: EdgeStats;
  stop?(): void | Promise<void>;
}
