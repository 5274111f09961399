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
import { requestBlockHashes } from '../../scheduling/cycle-scratch.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { Candidate, CycleState, EndpointsChangedHook, Picker, PickResult } from '../../scheduling/types.js';
import { params } from '../plugin-params.js';
import { sharedBlockHasher } from '../shared-services.js';

export const PREFIX_HASH_PICKER = 'prefix-hash-picker';

const SHORT_SEED = 0x1b873593;

export class PrefixHashPicker implements Picker, EndpointsChangedHook {
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
    candidates.forEach((c, i) => pos.set(c.endpoint.index, i));
    const walked = this.ring.walk(this.keyOf(state), (idx) => pos.has(idx), candidates.length);
    const order = walked.map((idx) => pos.get(idx)!);
    // Candidates missing from the ring (should not happen with a static registry) go last.
    if (order.length < candidates.length) {
      const inOrder = new Set(order);
      for (let i = 0; i < candidates.length; i++) if (!inOrder.has(i)) order.push(i);
    }
    return { order, reason: 'hash' };
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.ring = new HashRing(endpoints, this.virtualNodes);
  }
}

export const prefixHashPickerFactory: PluginFactory = (name, p, ctx) => {
  const r = params(name, p).only('hashBlocks', 'virtualNodes');
  return new PrefixHashPicker(
    name,
    sharedBlockHasher(ctx),
    r.number('hashBlocks', 16, { min: 1, integer: true }),
    r.number('virtualNodes', 160, { min: 1, max: 10000, integer: true }),
    ctx.endpoints.all(),
  );
};
