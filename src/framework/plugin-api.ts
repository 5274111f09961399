/**
 * How plugins are declared and built. A plugin type is one object: its type id, a
 * one-paragraph description and its zod parameter schema (defaults included; the schema is
 * also the source of the generated reference, docs/plugins.md), plus a factory that gets
 * the instance name, the validated parameters and a handle — never the router's config.
 *
 * Why a handle instead of the config: a plugin that reads global config fields is welded
 * to every other plugin's knobs; with (name, parameters, handle) a plugin can be added,
 * configured twice under two names, or tested on its own. The handle carries what is
 * scheduler-wide by nature: the endpoint set, clock, seeded randomness, the logger, the
 * data layer's signals, shared services, and the other plugin instances by name.
 */
import type { z } from 'zod';
import { RouterError } from '../core/errors.js';
import type { Endpoint } from '../core/types.js';
import type { SignalView } from './signal-view.js';
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../util/clock.js';
import type { Rng } from '../util/rng.js';
import type { Plugin } from './types.js';

/** A typed handle for a per-scheduler shared service (one block hasher, one prefix index…). */
export interface ServiceKey<T> {
  readonly id: string;
  /** Phantom field carrying the service type; never set. */
  readonly type?: T;
}

export function serviceKey<T>(id: string): ServiceKey<T> {
  return { id };
}

/** What the endpoint set looks like to a plugin (the registry, read-only). */
export interface EndpointView {
  readonly size: number;
  all(): readonly Endpoint[];
  byId(id: string): Endpoint | undefined;
  /** True when some endpoint restricts models (else model eligibility is a no-op). */
  readonly hasModelRestrictions: boolean;
}

/** What a factory may use to build a plugin instance. */
export interface PluginHandle {
  readonly endpoints: EndpointView;
  readonly clock: Clock;
  readonly rng: Rng;
  /** Already scoped to the plugin (`plugin` field). */
  readonly logger: Logger;
  /** The data layer: engine-signal age limit, token-load model, traffic statistics. */
  readonly signals: SignalView;
  /** The scheduler-wide instance for `key`, created by `create` on first use. */
  shared<T>(key: ServiceKey<T>, create: () => T): T;
  /**
   * Another plugin instance by name. Only plugins listed before this one in `plugins:` are
   * built yet. @throws RouterError BAD_CONFIG when there is no such instance.
   */
  plugin(name: string): Plugin;
}

export interface PluginType<S extends z.ZodType = z.ZodType> {
  /** kebab-case type id used in `plugins[].type`. */
  readonly type: string;
  /** What it does and why, for the generated reference. */
  readonly description: string;
  /** Parameters with defaults; unknown keys must be rejected (use `section` from util/schema). */
  readonly parameters: S;
  create(name: string, parameters: z.output<S>, handle: PluginHandle): Plugin;
}

/** Declares a plugin type (identity; gives the factory its parameter type). */
export function definePlugin<S extends z.ZodType>(t: PluginType<S>): PluginType<S> {
  return t;
}

/** Plugin type id → definition. Built-ins are registered in src/plugins/register-builtins.ts. */
export class PluginCatalog {
  private readonly types = new Map<string, PluginType>();

  /** @throws RouterError BAD_CONFIG when `t.type` is already registered. */
  register<S extends z.ZodType>(t: PluginType<S>): this {
    if (this.types.has(t.type)) throw new RouterError('BAD_CONFIG', `plugin type "${t.type}" registered twice`);
    this.types.set(t.type, t as unknown as PluginType);
    return this;
  }

  get(type: string): PluginType | undefined {
    return this.types.get(type);
  }

  has(type: string): boolean {
    return this.types.has(type);
  }

  /** Registered type ids, sorted. */
  typeIds(): string[] {
    return [...this.types.keys()].sort();
  }

  all(): PluginType[] {
    return this.typeIds().map((t) => this.types.get(t)!);
  }
}
