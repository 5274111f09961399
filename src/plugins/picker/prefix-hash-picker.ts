/**
 * Prefix-hash picker (baseline): consistent hashing of the request's prefix onto a ring of
 * endpoints with virtual nodes. The key is the chained hash of the first `hashBlocks` full
 * blocks (so it names that whole leading text, seeded by the model); requests shorter than
 * one block hash their whole prefix instead. The first eligible endpoint clockwise wins;
 * the next distinct eligible ones are the fallbacks.
 *
 * Maximal cache affinity, no load awareness at all: a popular prefix pins one engine
 * (the hotspot the cache-aware strategy exists to avoid). Kept as the comparison baseline.
 */
import type { Endpoint } from '../../core/types.js';
import type { BlockHasher } from '../../prefix-cache/block-hasher.js';
import { HashRing } from '../../prefix-cache/hash-ring.js';
import { hashString32 } from '../../prefix-cache/xxhash.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type {
  Candidate,
  CycleState,
  DecisionAnnotation,
  DecisionAnnotator,
  EndpointsChangedHook,
  Picker,
  PickResult,
} from '../../framework/types.js';
import { int, section } from '../../util/schema.js';
import { requestBlockHashes } from '../shared/cycle-keys.js';
import { blockParams, sharedBlockHasher } from '../shared/params.js';

export const PREFIX_HASH_PICKER = 'prefix-hash-picker';

const SHORT_SEED = 0x1b873593;

export class PrefixHashPicker implements Picker, EndpointsChangedHook, DecisionAnnotator {
  private ring: HashRing;

  constructor(
    readonly name: string,
    private readonly hasher: BlockHasher,
    private readonly hashBlocks: number,
    private readonly virtualNodes: number,
    endpoints: readonly Endpoint[],
  ) {
    this.ring = new HashRing(endpoints, virtualNodes);
  }

  /** The 32-bit ring key of the request. */
  keyOf(state: CycleState): number {
    const h = requestBlockHashes(state, this.hasher);
    if (h.count > 0) return h.lo[Math.min(this.hashBlocks, h.count) - 1]!;
    const { model, prefix } = state.request;
    return hashString32(prefix, hashString32(model, SHORT_SEED));
  }

  pick(state: CycleState, candidates: readonly Candidate[]): PickResult {
    const pos = new Map<number, number>();
    for (const [i, c] of candidates.entries()) pos.set(c.endpoint.index, i);
    const walked = this.ring.walk(this.keyOf(state), (idx) => pos.has(idx), candidates.length);
    const order = walked.map((idx) => pos.get(idx)!);
    // Candidates missing from the ring (should not happen with a static registry) go last.
    if (order.length < candidates.length) {
      const inOrder = new Set(order);
      for (let i = 0; i < candidates.length; i++) if (!inOrder.has(i)) order.push(i);
    }
    return { order, reason: 'hash' };
  }

  /** The request's block count (what the hash key was built from). */
  annotate(state: CycleState): DecisionAnnotation {
    return { totalBlocks: requestBlockHashes(state, this.hasher).count };
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.ring = new HashRing(endpoints, this.virtualNodes);
  }
}

export const prefixHashPicker = definePlugin({
  type: PREFIX_HASH_PICKER,
  description:
    'Consistent hashing of the first hashBlocks chained prefix blocks onto a ring with virtual nodes; the first eligible endpoint clockwise wins (maximal affinity, no load awareness; baseline).',
  parameters: section({
    hashBlocks: int({ min: 1, max: 1 << 20 })
      .default(16)
      .describe('Leading blocks whose chained hash is the ring key.'),
    virtualNodes: int({ min: 1, max: 10_000 }).default(160).describe('Ring points per endpoint.'),
    ...blockParams,
  }),
  create: (name, p, handle) =>
    new PrefixHashPicker(name, sharedBlockHasher(handle, p), p.hashBlocks, p.virtualNodes, handle.endpoints.all()),
});
