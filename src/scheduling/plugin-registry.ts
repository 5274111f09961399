/**
 * The plugin registry: plugin type id → factory, and strategy name → profile spec builder.
 *
 * Why a registry instead of a switch: the set of plugins grows (load signals, hotspot
 * replication, session affinity…) in separate files; each registers a factory under its
 * own id in `registerBuiltins()` and is then usable from any profile spec without edits to
 * the scheduler. A duplicate id is an error so two plugins can never silently shadow each
 * other. Test-only plugins are registered by tests on their own registry instance.
 */
import type { RouterConfig } from '../config/types.js';
import { RouterError } from '../core/errors.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { Logger } from '../telemetry/logger.js';
import type { Clock } from '../util/clock.js';
import type { Rng } from '../util/rng.js';
import type { ProfileSpec } from './profile-spec.js';
import type { Plugin } from './types.js';

/** Raw plugin parameters from a profile spec; each factory validates its own. */
export type PluginParams = Readonly<Record<string, unknown>>;

/** A typed handle for a per-scheduler shared service (one block hasher, one prefix index…). */
export interface ServiceKey<T> {
  readonly id: string;
  /** Phantom field carrying the service type; never set. */
  readonly type?: T;
}

export function serviceKey<T>(id: string): ServiceKey<T> {
  return { id };
}

/** What a factory may use to build a plugin instance. */
export interface PluginContext {
  readonly config: RouterConfig;
  readonly endpoints: EndpointRegistry;
  readonly clock: Clock;
  readonly rng: Rng;
  readonly logger: Logger;
  /** The scheduler-wide instance for `key`, created by `create` on first use. */
  shared<T>(key: ServiceKey<T>, create: () => T): T;
}

export type PluginFactory = (name: string, params: PluginParams, ctx: PluginContext) => Plugin;

/** Turns the router config into the profile of one strategy. */
export type StrategyBuilder = (config: RouterConfig) => ProfileSpec;

export class PluginRegistry {
  private readonly factories = new Map<string, PluginFactory>();
  private readonly strategies = new Map<string, StrategyBuilder>();

  /** @throws RouterError BAD_CONFIG when `type` is already registered. */
  registerPlugin(type: string, factory: PluginFactory): this {
    if (this.factories.has(type)) throw new RouterError('BAD_CONFIG', `plugin type "${type}" registered twice`);
    this.factories.set(type, factory);
    return this;
  }

  /** @throws RouterError BAD_CONFIG when `name` is already registered. */
  registerStrategy(name: string, builder: StrategyBuilder): this {
    if (this.strategies.has(name)) throw new RouterError('BAD_CONFIG', `strategy "${name}" registered twice`);
    this.strategies.set(name, builder);
    return this;
  }

  hasPlugin(type: string): boolean {
    return this.factories.has(type);
  }

  /** @throws RouterError BAD_CONFIG for an unknown type (or whatever the factory throws). */
  createPlugin(type: string, name: string, params: PluginParams, ctx: PluginContext): Plugin {
    const f = this.factories.get(type);
    if (f === undefined) throw new RouterError('BAD_CONFIG', `unknown plugin type "${type}" (known: ${this.pluginTypes().join(', ')})`);
    return f(name, params, ctx);
  }

  strategy(name: string): StrategyBuilder | undefined {
    return this.strategies.get(name);
  }

  pluginTypes(): string[] {
    return [...this.factories.keys()].sort();
  }

  strategyNames(): string[] {
    return [...this.strategies.keys()].sort();
  }
}
