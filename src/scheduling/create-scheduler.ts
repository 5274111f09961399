/**
 * Composition of the scheduling core from a validated RouterConfig: the endpoint registry,
 * the plugin registry with all built-ins, and the profile of `config.strategy`.
 */
import type { RouterConfig } from '../config/types.js';
import { RouterError } from '../core/errors.js';
import { EndpointRegistry, type LoadSource } from '../endpoints/registry.js';
import { registerBuiltins } from '../plugins/register-builtins.js';
import { silentLogger, type Logger } from '../telemetry/logger.js';
import type { Clock } from '../util/clock.js';
import type { Rng } from '../util/rng.js';
import { PluginRegistry, type PluginContext, type ServiceKey } from './plugin-registry.js';
import { buildProfile, type ProfileSpec } from './profile-spec.js';
import { Scheduler } from './scheduler.js';

export interface SchedulerDeps {
  readonly clock: Clock;
  readonly rng: Rng;
  readonly logger?: Logger;
  /** Plugin registry to build from (default: a new one with `registerBuiltins`). */
  readonly plugins?: PluginRegistry;
  /** Endpoint registry to use (default: built from `config.endpoints`). */
  readonly registry?: EndpointRegistry;
  /** Extra load sources (engine metrics, health…), applied in order after router accounting. */
  readonly loadSources?: readonly LoadSource[];
  /** A custom profile instead of the one `config.strategy` names. */
  readonly profile?: ProfileSpec;
}

/** The picker used when a profile names none. */
export const DEFAULT_PICKER = { type: 'max-score-picker' } as const;

/**
 * @throws RouterError BAD_CONFIG for unknown/unimplemented strategies, bad endpoints or
 *   invalid plugin parameters.
 */
export function createScheduler(config: RouterConfig, deps: SchedulerDeps): Scheduler {
  const logger = deps.logger ?? silentLogger;
  const registry = deps.registry ?? EndpointRegistry.fromConfig(config.endpoints, deps.clock);
  for (const s of deps.loadSources ?? []) registry.addLoadSource(s);
  const plugins = deps.plugins ?? registerBuiltins(new PluginRegistry());

  let spec = deps.profile;
  if (spec === undefined) {
    const builder = plugins.strategy(config.strategy);
    if (builder === undefined) {
      throw new RouterError('BAD_CONFIG', `strategy "${config.strategy}" is not implemented yet (available: ${plugins.strategyNames().join(', ')})`);
    }
    spec = builder(config);
  }

  const services = new Map<string, unknown>();
  const ctx: PluginContext = {
    config,
    endpoints: registry,
    clock: deps.clock,
    rng: deps.rng,
    logger,
    shared<T>(key: ServiceKey<T>, create: () => T): T {
      if (!services.has(key.id)) services.set(key.id, create());
      return services.get(key.id) as T;
    },
  };
  const built = buildProfile(spec, plugins, ctx, DEFAULT_PICKER);
  return new Scheduler({ config, registry, built, clock: deps.clock, rng: deps.rng, logger, services });
}
