/**
 * Prefix-cache affinity: scorer + routed hook over the shared approximate prefix index.
 *
 * Score rule: matched leading blocks on that endpoint ÷ blocks in the request (0 when the
 * request has no full block). Neutral value: 0 for everyone on a cold request (nothing
 * cached anywhere, or too short to have a full block), so load alone decides then.
 *
 * The match answers for *all* endpoints at once (per-block endpoint bitmasks, found by a
 * galloping search over the chained block keys — see prefix-index.ts), and the per-endpoint
 * counts are published as affinity evidence so the picker can label the decision and see
 * whether a filter removed the best-matching endpoint.
 *
 * Matches are counted in whole engine KV blocks once the engine reported its block size
 * (engine-block-granularity.ts): the engine caches nothing of a partial block.
 *
 * After routing, the request's blocks are inserted into the chosen endpoint's LRU, whatever
 * the reason for choosing it: that engine is about to compute (and cache) them. When an
 * endpoint leaves the registry its entries are evicted.
 */
import type { Endpoint, RouteDecision } from '../../core/types.js';
import type { BlockHasher } from '../../prefix-cache/block-hasher.js';
import type { EngineBlockGranularity } from '../../prefix-cache/engine-block-granularity.js';
import type { PrefixIndex } from '../../prefix-cache/prefix-index.js';
import { AFFINITY_EVIDENCE, requestBlockHashes, setScratch } from '../../scheduling/cycle-scratch.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { Candidate, CycleState, EndpointsChangedHook, RoutedHook, Scorer } from '../../scheduling/types.js';
import { params } from '../plugin-params.js';
import { sharedBlockHasher, sharedEngineBlockGranularity, sharedPrefixIndex } from '../shared-services.js';

export const PREFIX_CACHE_PLUGIN = 'prefix-cache';

export class PrefixCachePlugin implements Scorer, RoutedHook, EndpointsChangedHook {
  private present = new Set<number>();
  private zeros = new Uint32Array(0);
  private aligned = new Uint32Array(0);

  constructor(
    readonly name: string,
    readonly hasher: BlockHasher,
    readonly index: PrefixIndex,
    readonly granularity?: EngineBlockGranularity,
  ) {}

  score(state: CycleState, candidates: readonly Candidate[]): number[] {
    const hashes = requestBlockHashes(state, this.hasher);
    const total = hashes.count;
    const out = new Array<number>(candidates.length);
    if (total === 0) {
      out.fill(0);
      if (this.zeros.length !== this.index.endpointCount) this.zeros = new Uint32Array(this.index.endpointCount);
      setScratch(state, AFFINITY_EVIDENCE, { matchedByEndpoint: this.zeros, totalBlocks: 0 });
      return out;
    }
    let matched = this.index.match(hashes);
    if (this.granularity !== undefined) {
      if (this.aligned.length !== matched.length) this.aligned = new Uint32Array(matched.length);
      matched = this.granularity.alignAll(matched, this.aligned);
    }
    setScratch(state, AFFINITY_EVIDENCE, { matchedByEndpoint: matched, totalBlocks: total });
    for (let i = 0; i < candidates.length; i++) out[i] = (matched[candidates[i]!.endpoint.index] ?? 0) / total;
    return out;
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const hashes = requestBlockHashes(state, this.hasher);
    if (hashes.count > 0) this.index.insert(decision.endpoint.index, hashes);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    let maxIndex = -1;
    const now = new Set<number>();
    for (const e of endpoints) {
      now.add(e.index);
      if (e.index > maxIndex) maxIndex = e.index;
    }
    this.index.ensureEndpoints(maxIndex + 1);
    for (const i of this.present) if (!now.has(i) && i < this.index.endpointCount) this.index.evictEndpoint(i);
    this.present = now;
  }
}

export const prefixCachePluginFactory: PluginFactory = (name, p, ctx) => {
  params(name, p).only();
  return new PrefixCachePlugin(name, sharedBlockHasher(ctx), sharedPrefixIndex(ctx), sharedEngineBlockGranularity(ctx));
};
