/**
 * A validated config for tests and tools, built from the defaults plus overrides. It is
 * the defaults of parseConfig except for four test-friendly choices: ephemeral listen
 * ports (127.0.0.1:0), no start-up warm-up (`server.warmUpStreams` 0: a test app starts at
 * once), engine-metrics polling off, and four loopback endpoints 127.0.0.1:8001-8004 (all
 * in pool `default`).
 */
import type { StrategyInput } from '../plugins/presets/strategy.js';
import { deepMerge, type Mapping } from '../util/deep-merge.js';
import type { RouterConfig } from './types.js';
import { API_VERSION } from './defaults.js';
import { parseConfig } from './parse-config.js';

/** Recursive partial; arrays are replaced whole, their items may be partial. */
export type DeepPartial<T> = T extends readonly (infer U)[]
  ? readonly DeepPartial<U>[]
  : T extends object
    ? { -readonly [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** Overrides of a config document: any part of the validated form, and `strategy:` as written (a name or `{name, weights, plugins}`). */
export type ConfigOverrides = DeepPartial<Omit<RouterConfig, 'strategy'>> & { readonly strategy?: StrategyInput };

export const TEST_ENDPOINT_ADDRESSES: readonly string[] = ['127.0.0.1:8001', '127.0.0.1:8002', '127.0.0.1:8003', '127.0.0.1:8004'];

/** @throws RouterError BAD_CONFIG when the overrides are invalid. */
export function defaultConfig(overrides: ConfigOverrides = {}): RouterConfig {
  const base = {
    apiVersion: API_VERSION,
    server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0', warmUpStreams: 0 },
    endpoints: TEST_ENDPOINT_ADDRESSES.map((address) => ({ address })),
    engineMetrics: { enabled: false },
  };
  return parseConfig(deepMerge(base, overrides as Mapping));
}
