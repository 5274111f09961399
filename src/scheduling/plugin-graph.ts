/**
 * The plugin graph, in the shape of the GIE / llm-d EndpointPickerConfig: a list of plugin
 * instances (type, name, parameters) and scheduling profiles that reference them by name
 * with weights. `buildPluginGraph` validates every instance's parameters against its type's
 * schema (field-path errors such as `plugins[2].parameters.weight: expected number ...`),
 * builds the instances in list order (a plugin may look up the ones before it) and files
 * each profile reference under every extension point the instance implements.
 *
 * Hooks (routed, completed, endpoint changes, annotations, lifecycle) belong to the
 * instance, not to a profile: they run for every request whichever profile the handler
 * picked, so state such as the prefix index learns from every decision. One instance may
 * be referenced by several profiles (with different weights); it is still one instance.
 */
import type { Logger } from '../logging/logger.js';
import { configError, formatIssues, joinPath } from '../util/schema.js';
import type { PluginCatalog, PluginHandle, ServiceKey } from '../framework/plugin-api.js';
import {
  isCompletedHook,
  isDecisionAnnotator,
  isEndpointsChangedHook,
  isFilter,
  isLifecyclePlugin,
  isPicker,
  isPlacement,
  isProfileHandler,
  isRoutedHook,
  isScorer,
  type CompletedHook,
  type DecisionAnnotator,
  type EndpointsChangedHook,
  type Filter,
  type LifecyclePlugin,
  type Picker,
  type Placement,
  type Plugin,
  type Profile,
  type ProfileHandler,
  type RoutedHook,
  type WeightedScorer,
} from '../framework/types.js';

/** One plugin instance: `plugins[]` of the config. */
export interface PluginSpec {
  /** Registered plugin type id. */
  readonly type: string;
  /** Instance name, unique in the graph; defaults to the type. */
  readonly name?: string;
  readonly parameters?: Readonly<Record<string, unknown>>;
}

/** A plugin reference inside a profile. */
export interface ProfilePluginRef {
  readonly pluginRef: string;
  /** Scorer weight (>= 0, default 1); only for scorers. */
  readonly weight?: number;
}

/** `schedulingProfiles[]` of the config: filters in order, scorers, placements, one picker. */
export interface ProfileSpec {
  readonly name: string;
  readonly plugins: readonly ProfilePluginRef[];
}

/** The whole graph: what `strategy:` shorthands expand to, and what explicit YAML states. */
export interface GraphSpec {
  readonly plugins: readonly PluginSpec[];
  readonly schedulingProfiles: readonly ProfileSpec[];
}

export interface BuiltGraph {
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly handler: ProfileHandler;
  /** Every instance in `plugins` order, with its type id. */
  readonly instances: readonly { readonly type: string; readonly plugin: Plugin }[];
  readonly routedHooks: readonly RoutedHook[];
  readonly completedHooks: readonly CompletedHook[];
  readonly changedHooks: readonly EndpointsChangedHook[];
  readonly annotators: readonly DecisionAnnotator[];
  readonly lifecycle: readonly LifecyclePlugin[];
}

/** What the builder needs besides the spec: the handle's parts (the name-scoped parts are added per plugin). */
export type GraphHandle = Omit<PluginHandle, 'plugin' | 'logger'> & { readonly logger: Logger };

/**
 * Validates the parameters of every instance (all problems reported together), without
 * building anything. Returns the problem lines (empty when valid).
 */
export function validateGraphParameters(spec: GraphSpec, catalog: PluginCatalog, base = 'plugins'): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  spec.plugins.forEach((p, i) => {
    const at = joinPath(base, i);
    const t = catalog.get(p.type);
    if (t === undefined) {
      problems.push(`${joinPath(at, 'type')}: unknown plugin type "${p.type}" (known: ${catalog.typeIds().join(', ')})`);
    } else {
      const r = t.parameters.safeParse(p.parameters ?? {});
      if (!r.success) problems.push(...formatIssues(r.error.issues, joinPath(at, 'parameters')));
    }
    const name = p.name ?? p.type;
    const first = seen.get(name);
    if (first !== undefined) problems.push(`${joinPath(at, 'name')}: duplicate of ${joinPath(base, first)} ("${name}")`);
    else seen.set(name, i);
  });
  return problems;
}

/**
 * Builds the graph. @throws RouterError BAD_CONFIG for unknown types, invalid parameters,
 * duplicate names, dangling references, a profile without exactly one picker, or several
 * profiles without a profile handler.
 */
export function buildPluginGraph(spec: GraphSpec, catalog: PluginCatalog, h: GraphHandle): BuiltGraph {
  const problems = validateGraphParameters(spec, catalog);
  if (problems.length > 0) throw configError(problems);

  const byName = new Map<string, Plugin>();
  const instances: { type: string; plugin: Plugin }[] = [];
  spec.plugins.forEach((p, i) => {
    const t = catalog.get(p.type)!;
    const name = p.name ?? p.type;
    const params = t.parameters.parse(p.parameters ?? {}) as unknown;
    const handle: PluginHandle = {
      endpoints: h.endpoints,
      clock: h.clock,
      rng: h.rng,
      signals: h.signals,
      logger: h.logger.child({ plugin: name }),
      shared: <T>(key: ServiceKey<T>, create: () => T) => h.shared(key, create),
      plugin: (other: string) => {
        const found = byName.get(other);
        if (found === undefined) throw configError([`plugins[${i}].parameters: no plugin named "${other}" before "${name}"`]);
        return found;
      },
    };
    const plugin = t.create(name, params, handle);
    byName.set(name, plugin);
    instances.push({ type: p.type, plugin });
  });

  const profiles = new Map<string, Profile>();
  const refProblems: string[] = [];
  spec.schedulingProfiles.forEach((ps, i) => {
    const at = `schedulingProfiles[${i}]`;
    if (profiles.has(ps.name)) refProblems.push(`${at}.name: duplicate profile "${ps.name}"`);
    const filters: Filter[] = [];
    const scorers: WeightedScorer[] = [];
    const placements: Placement[] = [];
    let picker: Picker | undefined;
    ps.plugins.forEach((ref, j) => {
      const rat = `${at}.plugins[${j}]`;
      const p = byName.get(ref.pluginRef);
      if (p === undefined) {
        refProblems.push(`${rat}.pluginRef: no plugin named "${ref.pluginRef}" in plugins`);
        return;
      }
      let roles = 0;
      if (isFilter(p)) {
        filters.push(p);
        roles++;
      }
      if (isScorer(p)) {
        scorers.push({ scorer: p, weight: ref.weight ?? 1 });
        roles++;
      } else if (ref.weight !== undefined) {
        refProblems.push(`${rat}.weight: "${ref.pluginRef}" is not a scorer`);
      }
      if (isPlacement(p)) {
        placements.push(p);
        roles++;
      }
      if (isPicker(p)) {
        if (picker !== undefined) refProblems.push(`${rat}.pluginRef: a second picker ("${picker.name}", "${p.name}")`);
        picker = p;
        roles++;
      }
      if (roles === 0) refProblems.push(`${rat}.pluginRef: "${ref.pluginRef}" is not a filter, scorer, placement or picker`);
    });
    if (picker === undefined) refProblems.push(`${at}.plugins: no picker`);
    else profiles.set(ps.name, { name: ps.name, filters, scorers, placements, picker });
  });
  if (spec.schedulingProfiles.length === 0) refProblems.push('schedulingProfiles: at least one profile is required');

  const plugins = instances.map((x) => x.plugin);
  const handlers = plugins.filter(isProfileHandler);
  if (handlers.length > 1) refProblems.push(`plugins: more than one profile handler (${handlers.map((p) => p.name).join(', ')})`);
  if (handlers.length === 0 && spec.schedulingProfiles.length > 1) {
    refProblems.push('plugins: several schedulingProfiles need a profile handler plugin to choose between them');
  }
  for (const h of handlers) {
    for (const name of h.requiredProfiles ?? []) {
      if (!profiles.has(name))
        refProblems.push(`plugins: profile handler "${h.name}" needs a profile named "${name}" in schedulingProfiles`);
    }
  }
  if (refProblems.length > 0) throw configError(refProblems);

  const handler = handlers[0] ?? singleProfileHandler([...profiles.values()][0]!);
  return {
    profiles,
    handler,
    instances,
    routedHooks: plugins.filter(isRoutedHook),
    completedHooks: plugins.filter(isCompletedHook),
    changedHooks: plugins.filter(isEndpointsChangedHook),
    annotators: plugins.filter(isDecisionAnnotator),
    lifecycle: plugins.filter(isLifecyclePlugin),
  };
}

/** The handler of a graph with one profile: always that profile. */
function singleProfileHandler(profile: Profile): ProfileHandler {
  return { name: 'single-profile-handler', pickProfile: () => profile };
}
