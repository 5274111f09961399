/**
 * `peers-tune`: the `peers` Moreh-scaled workload at 16 req/s (where cache-aware first fell
 * behind the peer routers) with cache-aware variants side by side, to choose defaults for
 * the imbalance escape and the load weights; and the same variants on seed-table's hot
 * prefix, where the escape is what keeps the tail down. Opt-in; results in bench/results/peers-tune/.
 */
import type { ContenderSpec, RouterOverrides } from '../contenders/types.js';
import { PEERS } from './peers.js';
import { SEED_TABLE } from './seed-table.js';
import type { PresetSpec } from './types.js';

const base = PEERS.blocks[0]!;

function variant(label: string, routerOverrides?: RouterOverrides): ContenderSpec {
  return { kind: 'cacheroute', label, strategy: 'cache-aware', ...(routerOverrides ? { routerOverrides } : {}) };
}

export const PEERS_TUNE: PresetSpec = {
  ...PEERS,
  name: 'peers-tune',
  description: 'cache-aware variants (imbalance threshold, KV-usage and queue weights) on the peers workload at 16 req/s.',
  estimatedMinutes: 8,
  blocks: [
    {
      ...base,
      name: 'tune-16rps',
      qpsSweep: [16],
      contenders: [
        variant('ca-default'),
        variant('ca-abs32', { cacheAware: { imbalance: { absThreshold: 32 } } }),
        variant('ca-kv0-abs16', { cacheAware: { weights: { kvUsage: 0 }, imbalance: { absThreshold: 16 } } }),
        variant('ca-kv0-q1-abs32', { cacheAware: { weights: { kvUsage: 0, queue: 1 }, imbalance: { absThreshold: 32 } } }),
      ],
    },
    {
      ...SEED_TABLE.blocks.find((b) => b.name === 'hot-prefix')!,
      name: 'tune-hot-prefix',
      contenders: [
        variant('ca-default'),
        variant('ca-abs32', { cacheAware: { imbalance: { absThreshold: 32 } } }),
        variant('ca-kv0-q1-abs32', { cacheAware: { weights: { kvUsage: 0, queue: 1 }, imbalance: { absThreshold: 32 } } }),
      ],
    },
  ],
};
