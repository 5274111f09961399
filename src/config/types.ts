/**
 * Typed router configuration (the validated form of the YAML document), inferred from the
 * section list (config-sections.ts) plus what parse-config.ts resolves: the plugin graph
 * (from the `strategy` preset when not stated), the gRPC limit fitted to the body limit,
 * default metrics URLs.
 */
import type { z } from 'zod';
import type { GraphSpec } from '../scheduling/plugin-graph.js';
import type { CONFIG_SECTIONS } from './config-sections.js';
import type { ServerConfig } from './sections/server.js';

export { PRESET_NAMES, STRATEGIES, type StrategyName } from '../plugins/presets/presets.js';
export type { DataLayerConfig } from '../datalayer/data-layer-config.js';
export type { EndpointConfig } from '../endpoints/endpoint-config.js';
export type { EngineMetricsConfig } from '../datalayer/engine-metrics-config.js';
export type { RequestsConfig } from '../request/requests-config.js';
export type { ServerConfig } from './sections/server.js';
export type { TelemetryConfig } from '../telemetry/telemetry-config.js';

type Sections = (typeof CONFIG_SECTIONS)[number];

/** Every section's validated value, by key. */
export type ParsedSections = { readonly [S in Sections as S['key']]: z.output<S['schema']> };

export type RouterConfig = Omit<ParsedSections, 'server' | 'strategy' | 'plugins' | 'schedulingProfiles'> & {
  readonly server: ServerConfig;
  /** The strategy label decisions report: the preset's name, or the profile's name ('custom' for several). */
  readonly strategy: string;
  /** The resolved plugin graph (explicit, or what the strategy preset expands to). */
  readonly plugins: GraphSpec['plugins'];
  readonly schedulingProfiles: GraphSpec['schedulingProfiles'];
};
