/**
 * Per-scheduler services shared by several built-in plugins, by typed key. The prefix index
 * is shared so that later plugins (calibration from engine-reported cached tokens, hotspot
 * replication, admin stats) can reach the same model of the engines' caches.
 */
import type { RouterConfig } from '../config/types.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import { BlockHasher } from '../prefix-cache/block-hasher.js';
import { EngineBlockGranularity } from '../prefix-cache/engine-block-granularity.js';
import { PrefixIndex } from '../prefix-cache/prefix-index.js';
import { serviceKey, type PluginContext } from '../scheduling/plugin-registry.js';

export const BLOCK_HASHER = serviceKey<BlockHasher>('block-hasher');
export const PREFIX_INDEX = serviceKey<PrefixIndex>('prefix-index');
export const ENGINE_BLOCK_GRANULARITY = serviceKey<EngineBlockGranularity>('engine-block-granularity');

/** The scheduler's block hasher, configured from `cacheAware.blockChars` / `maxPrefixBlocks`. */
export function sharedBlockHasher(ctx: PluginContext): BlockHasher {
  return ctx.shared(BLOCK_HASHER, () => newBlockHasher(ctx.config));
}

/** The scheduler's prefix index, one LRU of `cacheAware.indexCapacityBlocks` per endpoint. */
export function sharedPrefixIndex(ctx: PluginContext): PrefixIndex {
  return ctx.shared(PREFIX_INDEX, () => newPrefixIndex(ctx.config, ctx.endpoints));
}

/** Engine KV block sizes (from cache_config_info) as the unit of predicted hits. */
export function sharedEngineBlockGranularity(ctx: PluginContext): EngineBlockGranularity {
  return ctx.shared(ENGINE_BLOCK_GRANULARITY, () => new EngineBlockGranularity(ctx.config.cacheAware.blockChars, ctx.config.requests.charsPerToken));
}

export function newBlockHasher(config: RouterConfig): BlockHasher {
  return new BlockHasher({ blockChars: config.cacheAware.blockChars, maxBlocks: config.cacheAware.maxPrefixBlocks });
}

export function newPrefixIndex(config: RouterConfig, endpoints: EndpointRegistry): PrefixIndex {
  return new PrefixIndex({ endpoints: endpoints.size, capacityBlocks: config.cacheAware.indexCapacityBlocks });
}
