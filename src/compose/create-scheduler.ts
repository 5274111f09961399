/**
 * Builds the scheduling core from a validated RouterConfig: the endpoint registry, the data
 * layer (engine metrics, token load, traffic statistics) wired onto it, and the plugin graph
 * of the config (explicit, or what the strategy preset expanded to) from the catalog.
 * Used by the composition root (src/compose/app.ts), tests and tools.
 */
import type { RouterConfig } from '../config/types.js';
import { DataLayer, type DataLayerOptions } from '../datalayer/data-layer.js';
import { EndpointRegistry, type LoadSource } from '../endpoints/registry.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { builtinCatalog } from '../plugins/register-builtins.js';
import type { PluginCatalog, ServiceKey } from '../framework/plugin-api.js';
import { buildPluginGraph, type GraphSpec } from '../scheduling/plugin-graph.js';
import { Scheduler } from '../scheduling/scheduler.js';
import type { Clock } from '../util/clock.js';
import type { Rng } from '../util/rng.js';
import { staticEndpointSpecs } from '../endpoints/endpoint-config.js';

export interface SchedulerDeps {
  readonly clock: Clock;
  readonly rng: Rng;
  readonly logger?: Logger;
  /** Plugin types (default: the built-ins). */
  readonly catalog?: PluginCatalog;
  /** Endpoint registry to use (default: built from `config.endpoints`). */
  readonly registry?: EndpointRegistry;
  /** Extra load sources (health…), applied in order after router accounting, before the data layer's. */
  readonly loadSources?: readonly LoadSource[];
  /** Load sources applied after the data layer's (other replicas' load, src/replication/). */
  readonly fleetLoadSources?: readonly LoadSource[];
  /** A graph instead of the config's (tests). */
  readonly graph?: GraphSpec;
}

/** The data layer's settings from the config sections (`engineMetrics:`, `dataLayer:`). */
export function dataLayerOptions(config: RouterConfig): DataLayerOptions {
  return {
    engineMetrics: config.engineMetrics,
    tokenLoad: config.dataLayer.tokenLoad,
    traffic: config.dataLayer.traffic,
  };
}

/** @throws RouterError BAD_CONFIG for bad endpoints or an invalid plugin graph. */
export function createScheduler(config: RouterConfig, deps: SchedulerDeps): Scheduler {
  const logger = deps.logger ?? silentLogger;
  const registry = deps.registry ?? new EndpointRegistry(staticEndpointSpecs(config.endpoints), deps.clock);
  for (const s of deps.loadSources ?? []) registry.addLoadSource(s);
  const dataLayer = new DataLayer(dataLayerOptions(config), registry, deps.clock, logger, deps.fleetLoadSources);
  const services = new Map<string, unknown>();
  const graph = buildPluginGraph(
    deps.graph ?? { plugins: config.plugins, schedulingProfiles: config.schedulingProfiles },
    deps.catalog ?? builtinCatalog(),
    {
      endpoints: registry,
      clock: deps.clock,
      rng: deps.rng,
      logger,
      signals: dataLayer.signals,
      shared<T>(key: ServiceKey<T>, create: () => T): T {
        if (!services.has(key.id)) services.set(key.id, create());
        return services.get(key.id) as T;
      },
    },
  );
  return new Scheduler({
    registry,
    graph,
    strategy: deps.graph !== undefined ? (deps.graph.schedulingProfiles[0]?.name ?? 'custom') : config.strategy,
    fallbacks: config.fallbacks,
    clock: deps.clock,
    rng: deps.rng,
    logger,
    services,
    observers: dataLayer.observers(),
    dataLayer,
  });
}
