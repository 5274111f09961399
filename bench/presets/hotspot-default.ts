/**
 * `hotspot-default`: the last measurements before hot-prefix replication (`load.hotspot`)
 * can be the default. `peers-hotspot` showed the group-level trigger harmless on the evenly
 * spread peers workload and helpful on hot prefixes; this runs replication off and on side
 * by side on seed-table's own scenarios (0/50/90% sharing, the 60% hot prefix) and on mixed
 * hot/warm traffic: one prompt with 30% of the traffic among 16 groups, which is busy
 * enough to tempt replication but not more than one engine can serve; and on the two
 * conversation workloads (mooncake trace, multi-turn chat), where many sessions share one
 * system prompt. Opt-in; results in bench/results/hotspot-default/.
 */
import type { ScenarioSpec } from '../workloads/scenario.js';
import { CACHE_AWARE_HOTSPOT_OFF, CACHE_AWARE_HOTSPOT_ON } from './building-blocks.js';
import { MOONCAKE, MULTI_TURN } from './long-sweeps.js';
import { SEED_TABLE } from './seed-table.js';
import type { PresetSpec } from './types.js';

const [SWEEP, HOT] = SEED_TABLE.blocks;
if (!SWEEP || !HOT) throw new Error('seed-table lost its sharing-sweep or hot-prefix block');
const HOT_60 = HOT.scenarios[0];
if (!HOT_60 || HOT_60.kind !== 'hot-prefix') throw new Error('seed-table hot-prefix block has no hot-prefix scenario');

const MIXED: ScenarioSpec = { ...HOT_60, label: 'hot-30-of-16', groups: 16, hotShare: 0.3 };
const VARIANTS = [CACHE_AWARE_HOTSPOT_OFF, CACHE_AWARE_HOTSPOT_ON];

export const HOTSPOT_DEFAULT: PresetSpec = {
  ...SEED_TABLE,
  name: 'hotspot-default',
  description: 'cache-aware with hot-prefix replication off and on, side by side, on seed-table (0/50/90% sharing, 60% hot prefix) and on mixed hot/warm traffic (30% on one of 16 prompts).',
  estimatedMinutes: 18,
  budget: { requestTimeoutMs: 60_000, maxRunMs: 150_000 },
  blocks: [
    { ...SWEEP, contenders: VARIANTS },
    { ...HOT, scenarios: [HOT_60, MIXED], contenders: VARIANTS },
    // Conversations: every session shares a system prompt (the replication group key) but
    // its own history is much longer; run alone with --only trace/ or --only chat/.
    { ...MOONCAKE.blocks[0]!, contenders: VARIANTS },
    { ...MULTI_TURN.blocks[0]!, contenders: VARIANTS },
  ],
};
