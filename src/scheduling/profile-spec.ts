/**
 * Declarative profiles: a list of plugin references (type, instance name, params, weight)
 * that `buildProfile` instantiates through the registry and files under every extension
 * point each instance implements (a multi-plugin such as the prefix cache is both a scorer
 * and a routed hook). Shape follows the GIE EndpointPickerConfig so a YAML form can map 1:1.
 */
import { RouterError } from '../core/errors.js';
import type { PluginContext, PluginParams, PluginRegistry } from './plugin-registry.js';
import {
  isCompletedHook,
  isRoutedHook,
  type CompletedHook,
  type EndpointsChangedHook,
  type Filter,
  type Picker,
  type Plugin,
  type Profile,
  type RoutedHook,
  type Scorer,
  type WeightedScorer,
} from './types.js';

export interface PluginSpec {
  /** Registered plugin type id. */
  readonly type: string;
  /** Instance name (unique in the profile); defaults to the type. */
  readonly name?: string;
  readonly params?: PluginParams;
  /** Scorer weight (≥ 0, default 1). Ignored for plugins that are not scorers. */
  readonly weight?: number;
}

export interface ProfileSpec {
  readonly name: string;
  /** In order: filters run in this order; exactly zero or one picker. */
  readonly plugins: readonly PluginSpec[];
}

/**
 * Optional lifecycle of a plugin with background work (pollers, timers). `start` must not
 * block: it launches its loops, which stop when `signal` aborts or `stop` is called.
 */
export interface LifecyclePlugin extends Plugin {
  start?(signal: AbortSignal): void;
  stop?(): void;
}

export function isFilter(p: Plugin): p is Filter {
  return typeof (p as Partial<Filter>).filter === 'function';
}
export function isScorer(p: Plugin): p is Scorer {
  return typeof (p as Partial<Scorer>).score === 'function';
}
export function isPicker(p: Plugin): p is Picker {
  return typeof (p as Partial<Picker>).pick === 'function';
}
export function isEndpointsChangedHook(p: Plugin): p is EndpointsChangedHook {
  return typeof (p as Partial<EndpointsChangedHook>).onEndpointsChanged === 'function';
}

export interface BuiltProfile {
  readonly profile: Profile;
  /** Every instance, in spec order (for lifecycle and endpoint-change fan-out). */
  readonly plugins: readonly Plugin[];
}

/**
 * Instantiates `spec`. `defaultPicker` supplies the picker when the spec names none.
 * @throws RouterError BAD_CONFIG for duplicate names, bad weights, several pickers or
 *   a plugin that implements no extension point.
 */
export function buildProfile(
  spec: ProfileSpec,
  registry: PluginRegistry,
  ctx: PluginContext,
  defaultPicker?: PluginSpec,
): BuiltProfile {
  const names = new Set<string>();
  const plugins: Plugin[] = [];
  const filters: Filter[] = [];
  const scorers: WeightedScorer[] = [];
  const routedHooks: RoutedHook[] = [];
  const completedHooks: CompletedHook[] = [];
  let picker: Picker | undefined;

  const add = (ps: PluginSpec): void => {
    const name = ps.name ?? ps.type;
    if (names.has(name)) throw new RouterError('BAD_CONFIG', `profile "${spec.name}": duplicate plugin name "${name}"`);
    names.add(name);
    const p = registry.createPlugin(ps.type, name, ps.params ?? {}, ctx);
    let roles = 0;
    if (isFilter(p)) {
      filters.push(p);
      roles++;
    }
    if (isScorer(p)) {
      const weight = ps.weight ?? 1;
      if (!Number.isFinite(weight) || weight < 0) {
        throw new RouterError('BAD_CONFIG', `profile "${spec.name}": scorer "${name}" weight must be a finite number >= 0, got ${weight}`);
      }
      scorers.push({ scorer: p, weight });
      roles++;
    }
    if (isPicker(p)) {
      if (picker !== undefined) throw new RouterError('BAD_CONFIG', `profile "${spec.name}": more than one picker ("${picker.name}", "${name}")`);
      picker = p;
      roles++;
    }
    if (isRoutedHook(p)) {
      routedHooks.push(p);
      roles++;
    }
    if (isCompletedHook(p)) {
      completedHooks.push(p);
      roles++;
    }
    if (isEndpointsChangedHook(p)) roles++;
    if (roles === 0) throw new RouterError('BAD_CONFIG', `profile "${spec.name}": plugin "${name}" (${ps.type}) implements no extension point`);
    plugins.push(p);
  };

  for (const ps of spec.plugins) add(ps);
  if (picker === undefined && defaultPicker !== undefined) add(defaultPicker);
  if (picker === undefined) throw new RouterError('BAD_CONFIG', `profile "${spec.name}": no picker`);

  return {
    profile: { name: spec.name, filters, scorers, picker, routedHooks, completedHooks },
    plugins,
  };
}
