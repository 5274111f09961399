/**
 * The shorthand knobs of the shipped presets: the `cacheAware:` and `load:` config
 * sections. They are read only by the preset expansion (presets.ts), which turns them into
 * plugin parameters, and by the composition root for the data layer's token-load and
 * traffic settings; no plugin sees them. With an explicit `plugins:` graph they configure
 * the data layer only.
 */
import { z } from 'zod';
import { ALWAYS, bool, expecting, int, num, oneOf, optionalSection } from '../../util/schema.js';
import { AUTO_KNOBS } from '../handler/auto-profile-handler.js';
import { CALIBRATION_KNOBS } from '../multi/index-calibration.js';
import { BOUNDED_LOAD_KNOBS } from '../picker/bounded-load-hash.js';
import { IMBALANCE_KNOBS } from '../filter/imbalance-escape-filter.js';
import { HOTSPOT_KNOBS } from '../filter/hotspot-replication.js';
import { INDEX_CAPACITY_PARAM } from '../multi/prefix-cache-plugin.js';
import { SESSION_KNOBS } from '../scorer/session-affinity.js';
import { blockParams, groupKeyParams, loadUnitParams } from '../shared/params.js';

/** GIE/llm-d default profile: prefix 3, queue 2, kv-cache utilisation 2. */
export const DEFAULT_WEIGHTS = { prefix: 3, queue: 2, kvUsage: 2 } as const;
/** The queue scorer's signal in cache-aware. */
export const DEFAULT_QUEUE_SIGNAL = 'effective' as const;
/** Cold requests in cache-aware go to the shortest prefill queue (docs/decisions/0100-plugin-graph.md). */
export const DEFAULT_COLD_ROUTING = 'prefill-queue' as const;
/** Break equal prefill queues by the fewest recent cold placements. */
export const DEFAULT_COLD_SPREAD = true;

const WEIGHT = num({ min: 0, max: 1000 });

export const cacheAwareSchema = optionalSection({
  ...blockParams,
  indexCapacityBlocks: INDEX_CAPACITY_PARAM,
  weights: optionalSection({
    prefix: WEIGHT.default(DEFAULT_WEIGHTS.prefix),
    queue: WEIGHT.default(DEFAULT_WEIGHTS.queue),
    kvUsage: WEIGHT.default(DEFAULT_WEIGHTS.kvUsage),
  }).superRefine((w, ctx) => {
    if (typeof w !== 'object' || w === null) return;
    if (
      typeof w.prefix === 'number' &&
      typeof w.queue === 'number' &&
      typeof w.kvUsage === 'number' &&
      w.prefix + w.queue + w.kvUsage === 0
    )
      ctx.addIssue({ code: 'custom', message: 'at least one weight must be greater than 0' });
  }, ALWAYS),
  imbalance: optionalSection(IMBALANCE_KNOBS),
  queueSignal: oneOf(['effective', 'prefill']).default(DEFAULT_QUEUE_SIGNAL),
  coldRouting: oneOf(['scores', 'prefill-queue']).default(DEFAULT_COLD_ROUTING),
  coldSpread: bool().default(DEFAULT_COLD_SPREAD),
  preciseIndex: z
    .record(z.string(), z.unknown(), { error: expecting('a mapping') })
    .optional()
    .describe(
      'When set, the cache-aware strategy scores affinity with the precise-prefix-cache plugin (engine KV events + router-side tokenization); these are its parameters (docs/plugins.md, docs/kv-events.md).',
    ),
});

export type CacheAwareConfig = z.output<typeof cacheAwareSchema>;

/** Expected output length before any response was seen (a typical chat answer). */
export const DEFAULT_OUTPUT_TOKENS_PRIOR = 256;
/** EWMA weight: about the last 10–20 responses matter. */
export const DEFAULT_OUTPUT_TOKENS_ALPHA = 0.1;
/** Off in cache-aware by default: the queue scorer already weighs load; turn on with tokens. */
export const DEFAULT_TOKEN_LOAD_WEIGHT = 0;
/** One minute: long enough to see reuse across a conversation's turns, short enough to adapt. */
export const DEFAULT_TRAFFIC_WINDOW_MS = 60_000;
/**
 * Off by default (opt-in): on conversation traffic the group key (a shared system prompt) is
 * much shorter than what each session has cached, and every growth step moves a session
 * away from its history (docs/decisions/0100-plugin-graph.md has the measurements).
 */
export const DEFAULT_HOTSPOT_ENABLED = false;
/** Above the sum of the default cache-aware weights (3+2+2), so stickiness wins unless overloaded. */
export const DEFAULT_SESSION_WEIGHT = 10;
/** Round-robin: with no cache to win, the even spread is what counts (least loaded on old queues herds). */
export const DEFAULT_AUTO_LOAD_MODE = 'round-robin' as const;
/** A short shared template header (one or two blocks of a long prompt) is not worth concentrating load for. */
export const DEFAULT_AUTO_LEARNING_MIN_MATCH = 0.25;

export const loadSchema = optionalSection({
  ...loadUnitParams,
  outputTokensPrior: int({ min: 1, max: 1_000_000 }).default(DEFAULT_OUTPUT_TOKENS_PRIOR),
  outputTokensAlpha: num({ minExclusive: 0, max: 1 }).default(DEFAULT_OUTPUT_TOKENS_ALPHA),
  tokenLoadWeight: num({ min: 0, max: 1000 }).default(DEFAULT_TOKEN_LOAD_WEIGHT),
  trafficWindowMs: int({ min: 1000, max: 3_600_000 }).default(DEFAULT_TRAFFIC_WINDOW_MS),
  hotspot: optionalSection({ enabled: bool().default(DEFAULT_HOTSPOT_ENABLED), ...HOTSPOT_KNOBS }).superRefine((h, ctx) => {
    if (typeof h !== 'object' || h === null) return;
    if (typeof h.lowWater === 'number' && typeof h.highWater === 'number' && h.lowWater >= h.highWater) {
      ctx.addIssue({ code: 'custom', path: ['lowWater'], message: `must be below highWater (${h.highWater}), or the set would flap` });
    }
  }, ALWAYS),
  boundedLoad: optionalSection({ epsilon: BOUNDED_LOAD_KNOBS.epsilon, keyChars: groupKeyParams.keyChars }),
  session: optionalSection({
    ...SESSION_KNOBS,
    weight: num({ min: 0, max: 1000 })
      .default(DEFAULT_SESSION_WEIGHT)
      .describe('Scorer weight of the session stickiness in the scored presets.'),
  }),
  calibration: optionalSection(CALIBRATION_KNOBS),
  auto: optionalSection({
    ...AUTO_KNOBS,
    loadMode: oneOf(['least-loaded', 'round-robin']).default(DEFAULT_AUTO_LOAD_MODE).describe('How the load profile balances.'),
    learningMinMatch: num({ minExclusive: 0, max: 1 })
      .default(DEFAULT_AUTO_LEARNING_MIN_MATCH)
      .describe('In the learning profile, a request follows affinity only when some engine holds at least this share of its prompt.'),
  }).superRefine((a, ctx) => {
    if (typeof a !== 'object' || a === null) return;
    if (typeof a.lowReuse === 'number' && typeof a.highReuse === 'number' && a.lowReuse > a.highReuse) {
      ctx.addIssue({ code: 'custom', path: ['lowReuse'], message: `must not exceed highReuse (${a.highReuse})` });
    }
  }, ALWAYS),
});

export type LoadConfig = z.output<typeof loadSchema>;

/** The plugin defaults the shorthand knobs start from, in one place for docs and tests. */
export { DEFAULT_BLOCK_CHARS, DEFAULT_MAX_PREFIX_BLOCKS } from '../shared/params.js';
export { DEFAULT_INDEX_CAPACITY_BLOCKS } from '../multi/prefix-cache-plugin.js';
export { DEFAULT_IMBALANCE_ABS, DEFAULT_IMBALANCE_REL } from '../filter/imbalance-escape-filter.js';
export {
  DEFAULT_HOTSPOT_HIGH_WATER,
  DEFAULT_HOTSPOT_LOW_WATER,
  DEFAULT_HOTSPOT_MIN_DWELL_MS,
  DEFAULT_HOTSPOT_MIN_GROUP_SHARE,
  DEFAULT_HOTSPOT_MIN_LOAD_RATIO,
  DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS,
} from '../filter/hotspot-replication.js';
