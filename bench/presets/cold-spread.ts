/**
 * `cold-spread`: cache-aware with and without the cold-spread tie-break (equal prefill queues
 * broken by the fewest recent cold placements, `cacheAware.coldSpread`) side by side, on
 * the workloads where cold placement decides where prefix groups live: multi-turn chat (four
 * system prompts arriving on an idle fleet), seed-table's 0% sharing (every request cold)
 * and its 60% hot prefix, and the peers workload at 8 and 24 req/s (48 groups placed by a
 * cold warm-up). Opt-in; results in bench/results/cold-spread/.
 */
import type { ContenderSpec } from '../contenders/types.js';
import { MULTI_TURN } from './long-sweeps.js';
import { PEERS } from './peers.js';
import { SEED_TABLE } from './seed-table.js';
import type { PresetSpec } from './types.js';

const VARIANTS: readonly ContenderSpec[] = [
  { kind: 'cacheroute', label: 'cacheroute-cache-aware', strategy: 'cache-aware', routerOverrides: { cacheAware: { coldSpread: true } } },
  { kind: 'cacheroute', label: 'cacheroute-cache-aware-nospread', strategy: 'cache-aware', routerOverrides: { cacheAware: { coldSpread: false } } },
];

const [SWEEP, HOT] = SEED_TABLE.blocks;
if (!SWEEP || !HOT) throw new Error('seed-table lost its sharing-sweep or hot-prefix block');
const SHARING_0 = SWEEP.scenarios.find((sc) => sc.label === 'sharing-0');
if (!SHARING_0) throw new Error('seed-table has no sharing-0 scenario');

export const COLD_SPREAD: PresetSpec = {
  ...MULTI_TURN,
  name: 'cold-spread',
  description: 'cache-aware with and without the cold-spread tie-break on multi-turn chat, seed-table 0% sharing and hot prefix, and the peers workload at 8 and 24 req/s.',
  estimatedMinutes: 12,
  blocks: [
    { ...MULTI_TURN.blocks[0]!, contenders: VARIANTS },
    { ...SWEEP, scenarios: [SHARING_0], contenders: VARIANTS },
    { ...HOT, contenders: VARIANTS },
    { ...PEERS.blocks[0]!, qpsSweep: [8, 24], contenders: VARIANTS, contenderMaxQps: {} },
  ],
};
