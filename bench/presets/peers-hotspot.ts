/**
 * `peers-hotspot`: hot-prefix replication (`load.hotspot`) variants side by side on the two
 * workloads that decide whether it can be the default: the `peers` Moreh-scaled workload
 * (48 evenly spread groups) at 8 and 16 req/s, where `peers` measured replication turning
 * busy-but-even engines into a cascade of misses, and the `peers-hot` hot prefix, where it
 * is meant to help. Variants: the shipped default, replication on at its defaults, with a
 * higher high-water mark (12 requests in flight), and with `load.unit: tokens` (pending
 * prefill work rather than requests decoding) without and with replication. A third block
 * repeats load-hotspot's 8-engine hot prefix with the same variants (minus highWater 12). Opt-in; results in bench/results/peers-hotspot/.
 */
import type { ContenderSpec, RouterOverrides } from '../contenders/types.js';
import { cacheroute, CACHE_AWARE_HOTSPOT_ON } from './building-blocks.js';
import { LOAD_HOTSPOT } from './load-signals.js';
import { PEERS_HOT } from './long-sweeps.js';
import { PEERS } from './peers.js';
import type { PresetSpec } from './types.js';

function hotspot(label: string, hotspotOverrides: Readonly<Record<string, unknown>>, load: RouterOverrides = {}): ContenderSpec {
  return { kind: 'cacheroute', label, strategy: 'cache-aware', routerOverrides: { load: { ...load, hotspot: { enabled: true, ...hotspotOverrides } } } };
}

const VARIANTS: readonly ContenderSpec[] = [
  cacheroute('cache-aware'),
  CACHE_AWARE_HOTSPOT_ON,
  hotspot('cacheroute-cache-aware+hotspot-hw12', { highWater: 12, lowWater: 4 }),
  // load.unit is global (the imbalance escape and the queue comparisons change unit too),
  // so token units are measured with and without replication.
  { kind: 'cacheroute', label: 'cacheroute-cache-aware-tokens', strategy: 'cache-aware', routerOverrides: { load: { unit: 'tokens' } } },
  hotspot('cacheroute-cache-aware+hotspot-tokens', {}, { unit: 'tokens' }),
];

export const PEERS_HOTSPOT: PresetSpec = {
  ...PEERS,
  name: 'peers-hotspot',
  description: 'cache-aware with hot-prefix replication off (default) / on / on with highWater 12 / token units off and on, on the peers workload at 8 and 16 req/s on the peers-hot hot prefix, and on load-hotspot\'s 8-engine hot prefix.',
  estimatedMinutes: 11,
  budget: LOAD_HOTSPOT.budget,
  blocks: [
    { ...PEERS.blocks[0]!, name: 'peers-8-16rps', qpsSweep: [8, 16], contenders: VARIANTS, contenderMaxQps: {} },
    { ...PEERS_HOT.blocks[0]!, name: 'hot-prefix', contenders: VARIANTS },
    // load-hotspot's 8-engine hot prefix, where replication in request units helps most:
    // does it still help in token units? (Run on its own with --only hot8/.)
    { ...LOAD_HOTSPOT.blocks[0]!, name: 'hot8', contenders: VARIANTS.filter((c) => !c.label.endsWith('-hw12')) },
  ],
};
