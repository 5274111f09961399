/**
 * Wires engine health into a running scheduler: the monitor becomes a load source (so the
 * health filter sees ejections), watches request outcomes and metric scrapes, and on an
 * engine restart calls the caller's `onRestart` (the composition root drops that engine's
 * prefix-index entries there). Returns undefined when health is
 * disabled or the scheduler does not expose what health needs (a test double).
 */
import type { Endpoint } from '../core/types.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { EngineSignalStore } from '../endpoints/engine-metrics-store.js';
import type { DecisionListener } from '../scheduling/decision-events.js';
import type { ServiceKey } from '../framework/plugin-api.js';
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../util/clock.js';
import { EngineHealthMonitor } from './engine-health-monitor.js';
import type { HealthConfig } from './health-config.js';

/** The parts of the scheduler health attaches to (src/scheduling/scheduler.ts has them). */
export interface HealthHost {
  readonly registry: EndpointRegistry;
  /** The data layer's engine-signal store (when engine metrics are polled). */
  readonly dataLayer?: { readonly store: EngineSignalStore | undefined } | undefined;
  onDecision(listener: DecisionListener): () => void;
  service<T>(key: ServiceKey<T>): T | undefined;
}

export function isHealthHost(x: unknown): x is HealthHost {
  const h = x as Partial<HealthHost>;
  return (
    typeof h === 'object' && h !== null && h.registry !== undefined && typeof h.onDecision === 'function' && typeof h.service === 'function'
  );
}

export interface AttachedHealth {
  readonly monitor: EngineHealthMonitor;
  start(signal?: AbortSignal): void;
  stop(): void;
}

export function attachEngineHealth(
  config: HealthConfig,
  host: HealthHost,
  deps: { clock: Clock; logger: Logger; onRestart?: (endpoint: Endpoint) => void },
): AttachedHealth | undefined {
  if (!config.enabled) return undefined;
  const registry = host.registry;
  const store = host.dataLayer?.store;
  const monitor = new EngineHealthMonitor({
    config,
    endpoints: () => registry.all(),
    clock: deps.clock,
    logger: deps.logger,
    ...(store !== undefined ? { store } : {}),
    onRestart: (ep: Endpoint) => deps.onRestart?.(ep),
  });
  const removeSource = registry.addLoadSource(monitor);
  const unsubscribe = host.onDecision((ev) => {
    if (ev.kind === 'finished') monitor.onCompleted(ev.request, ev.decision, ev.outcome);
  });
  // Engines that leave the fleet take their health state with them.
  const unwatch = registry.onMembershipChange((c) => monitor.retain(c.endpoints.map((e) => e.id)));
  return {
    monitor,
    start: (signal) => monitor.start(signal),
    stop: () => {
      monitor.stop();
      unsubscribe();
      unwatch();
      removeSource();
    },
  };
}
