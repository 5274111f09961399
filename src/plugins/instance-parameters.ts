/**
 * The effective parameters of one instance of a plugin graph: its `parameters` checked and
 * completed by its type's own schema (every default filled in). For tools and tests that
 * need, say, the prefix-cache block size a config's graph runs with, without a second copy
 * of the plugin's defaults.
 */
import type { PluginCatalog } from '../framework/plugin-api.js';
import type { GraphSpec } from '../scheduling/plugin-graph.js';
import { configError } from '../util/schema.js';
import { builtinCatalog } from './register-builtins.js';

/** @throws RouterError BAD_CONFIG when the graph has no such instance or its parameters are invalid. */
export function instanceParameters<T = Record<string, unknown>>(
  graph: Pick<GraphSpec, 'plugins'>,
  name: string,
  catalog: PluginCatalog = builtinCatalog(),
): T {
  const spec = graph.plugins.find((p) => (p.name ?? p.type) === name);
  const type = spec !== undefined ? catalog.get(spec.type) : undefined;
  if (spec === undefined || type === undefined) throw configError([`plugins: no instance named "${name}"`]);
  return type.parameters.parse(spec.parameters ?? {}) as T;
}
