/** `cacheAware:` section: prefix blocks, index size, scorer weights, imbalance escape. */
import type { CacheAwareConfig } from '../types.js';
import { bool, fail, int, num, ok, oneOf, type Check, type ObjectReader } from '../field-reader.js';
import { parsePrecisePrefixCacheParams } from '../../plugins/multi/precise-prefix-cache-plugin.js';
import {
  DEFAULT_BLOCK_CHARS,
  DEFAULT_COLD_ROUTING,
  DEFAULT_COLD_SPREAD,
  DEFAULT_IMBALANCE_ABS,
  DEFAULT_IMBALANCE_REL,
  DEFAULT_INDEX_CAPACITY_BLOCKS,
  DEFAULT_MAX_PREFIX_BLOCKS,
  DEFAULT_QUEUE_SIGNAL,
  DEFAULT_WEIGHTS,
} from '../defaults.js';

const WEIGHT = num({ min: 0, max: 1000 });

const plainObject: Check<Readonly<Record<string, unknown>>> = (v) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? ok(v as Record<string, unknown>) : fail('a mapping', v);

export function parseCacheAware(r: ObjectReader): CacheAwareConfig {
  const blockChars = r.get('blockChars', int({ min: 1, max: 65_536 }), DEFAULT_BLOCK_CHARS);
  const maxPrefixBlocks = r.get('maxPrefixBlocks', int({ min: 1, max: 1 << 20 }), DEFAULT_MAX_PREFIX_BLOCKS);
  const indexCapacityBlocks = r.get(
    'indexCapacityBlocks',
    int({ min: 1, max: 100_000_000 }),
    DEFAULT_INDEX_CAPACITY_BLOCKS,
  );

  const w = r.section('weights');
  const weights = {
    prefix: w.get('prefix', WEIGHT, DEFAULT_WEIGHTS.prefix),
    queue: w.get('queue', WEIGHT, DEFAULT_WEIGHTS.queue),
    kvUsage: w.get('kvUsage', WEIGHT, DEFAULT_WEIGHTS.kvUsage),
  };
  w.done();
  if (weights.prefix + weights.queue + weights.kvUsage === 0) {
    r.report('weights', 'at least one weight must be greater than 0');
  }

  const im = r.section('imbalance');
  const imbalance = {
    absThreshold: im.get('absThreshold', num({ min: 0, max: 1_000_000 }), DEFAULT_IMBALANCE_ABS),
    relThreshold: im.get('relThreshold', num({ min: 1, max: 1000 }), DEFAULT_IMBALANCE_REL),
  };
  im.done();
  const queueSignal = r.get('queueSignal', oneOf(['effective', 'prefill']), DEFAULT_QUEUE_SIGNAL);
  const coldRouting = r.get('coldRouting', oneOf(['scores', 'prefill-queue']), DEFAULT_COLD_ROUTING);
  const coldSpread = r.get('coldSpread', bool(), DEFAULT_COLD_SPREAD);
  // Parameters of the precise-prefix-cache plugin; its own parser checks them (field paths
  // in its messages name the plugin and the parameter).
  const preciseIndex = r.get('preciseIndex', plainObject, undefined);
  if (preciseIndex !== undefined) {
    try {
      parsePrecisePrefixCacheParams('cacheAware.preciseIndex', preciseIndex);
    } catch (err) {
      r.report('preciseIndex', (err as Error).message);
    }
  }
  r.done();
  return { blockChars, maxPrefixBlocks, indexCapacityBlocks, weights, imbalance, queueSignal, coldRouting, coldSpread, ...(preciseIndex !== undefined ? { preciseIndex } : {}) };
}
