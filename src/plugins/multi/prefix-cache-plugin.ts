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
 * (engine-block-granularity.ts, fed by the index-calibration plugin): the engine caches
 * nothing of a partial block.
 *
 * After routing, the request's blocks are inserted into the chosen endpoint's LRU, whatever
 * the reason for choosing it: that engine is about to compute (and cache) them. When an
 * endpoint leaves the registry its entries are evicted.
 *
 * Several router replicas share this index through `replica` (prefix-index-replica.ts,
 * published as PREFIX_INDEX_REPLICA): its local changes go out by endpoint id, the others'
 * come back in.
 */
import type { Endpoint, RouteDecision } from '../../core/types.js';
import type { BlockHasher } from '../../prefix-cache/block-hasher.js';
import { EngineBlockGranularity } from '../../prefix-cache/engine-block-granularity.js';
import { PrefixIndex } from '../../prefix-cache/prefix-index.js';
import { getScratch, scratchKey, setScratch, type ScratchKey } from '../../framework/cycle-scratch.js';
import { definePlugin, serviceKey } from '../../framework/plugin-api.js';
import type {
  Candidate,
  CycleState,
  DecisionAnnotation,
  DecisionAnnotator,
  EndpointsChangedHook,
  RoutedHook,
  Scorer,
} from '../../framework/types.js';
import { int, section } from '../../util/schema.js';
import { AFFINITY_EVIDENCE, requestBlockHashes, type AffinityEvidence } from '../shared/cycle-keys.js';
import { blockParams, sharedBlockHasher } from '../shared/params.js';
import { EndpointPresence } from '../shared/endpoint-presence.js';
import { PREFIX_INDEX_REPLICA, PrefixIndexReplicaPort } from './prefix-index-replica.js';

export const PREFIX_CACHE_PLUGIN = 'prefix-cache';

/** The first prefix-cache instance's index, for telemetry (index size per endpoint). */
export const PREFIX_INDEX = serviceKey<PrefixIndex>('prefix-index');
/** The first prefix-cache instance's engine-block granularity, for telemetry. */
export const ENGINE_BLOCK_GRANULARITY = serviceKey<EngineBlockGranularity>('engine-block-granularity');

/** GIE's sizing: Llama-3-8B on an H100-80GB holds ≈500k KV tokens ≈ 31,250 blocks of 64 chars. */
export const DEFAULT_INDEX_CAPACITY_BLOCKS = 31_250;

export class PrefixCachePlugin implements Scorer, RoutedHook, EndpointsChangedHook, DecisionAnnotator {
  private readonly presence = new EndpointPresence();
  private zeros = new Uint32Array(0);
  private aligned = new Uint32Array(0);
  /** The engines' KV block as the unit of a match (engine block sizes set by index-calibration). */
  readonly granularity: EngineBlockGranularity;
  /** This instance's evidence of the current cycle (annotate reports only what it scored). */
  private readonly own: ScratchKey<AffinityEvidence>;
  /** The replication seam (local changes out, other replicas' changes in). */
  readonly replica: PrefixIndexReplicaPort;

  constructor(
    readonly name: string,
    readonly hasher: BlockHasher,
    readonly index: PrefixIndex,
    /** The configured per-endpoint capacity (the ceiling without engine data). */
    readonly capacityBlocks: number = DEFAULT_INDEX_CAPACITY_BLOCKS,
    members: readonly Endpoint[] = [],
  ) {
    this.own = scratchKey<AffinityEvidence>(`prefix-cache/${name}`);
    this.granularity = new EngineBlockGranularity(hasher.blockChars, 4);
    this.replica = new PrefixIndexReplicaPort(index, hasher.blockChars, members);
  }

  score(state: CycleState, candidates: readonly Candidate[]): number[] {
    const hashes = requestBlockHashes(state, this.hasher);
    const total = hashes.count;
    const out = new Array<number>(candidates.length);
    if (total === 0) {
      out.fill(0);
      if (this.zeros.length !== this.index.endpointCount) this.zeros = new Uint32Array(this.index.endpointCount);
      this.publish(state, { matchedByEndpoint: this.zeros, totalBlocks: 0, bestOver: candidates, bestMatched: 0 });
      return out;
    }
    let matched = this.index.match(hashes);
    if (this.aligned.length !== matched.length) this.aligned = new Uint32Array(matched.length);
    matched = this.granularity.alignAll(matched, this.aligned);
    let best = 0;
    for (let i = 0; i < candidates.length; i++) {
      const m = matched[candidates[i]!.endpoint.index] ?? 0;
      if (m > best) best = m;
      out[i] = m / total;
    }
    this.publish(state, { matchedByEndpoint: matched, totalBlocks: total, bestOver: candidates, bestMatched: best });
    return out;
  }

  /** Matched blocks on the chosen endpoint, when this plugin scored the cycle. */
  annotate(state: CycleState, chosen: Candidate): DecisionAnnotation | undefined {
    const ev = getScratch(state, this.own);
    if (ev === undefined) return undefined;
    const matchedBlocks = ev.matchedByEndpoint[chosen.endpoint.index] ?? 0;
    return { matchedBlocks, totalBlocks: ev.totalBlocks, matchedChars: matchedBlocks * this.hasher.blockChars };
  }

  debugState(): unknown {
    const endpoints = [];
    for (let i = 0; i < this.index.endpointCount; i++) {
      const engineBlockTokens = this.granularity.engineBlockTokens(i);
      endpoints.push({
        index: i,
        blocks: this.index.size(i),
        capacityBlocks: this.index.capacity(i),
        ...(engineBlockTokens !== undefined ? { engineBlockTokens } : {}),
      });
    }
    return { blockChars: this.hasher.blockChars, endpoints };
  }

  private publish(state: CycleState, ev: AffinityEvidence): void {
    setScratch(state, AFFINITY_EVIDENCE, ev);
    setScratch(state, this.own, ev);
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const hashes = requestBlockHashes(state, this.hasher);
    if (hashes.count === 0) return;
    this.index.insert(decision.endpoint.index, hashes);
    // A split request's prefill engine computed the prompt too (and keeps it).
    const prefill = decision.disagg?.prefill;
    if (prefill !== undefined) this.index.insert(prefill.index, hashes);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    const { size, departed } = this.presence.update(endpoints);
    this.index.ensureEndpoints(size);
    // Leaving this replica's registry is not news for the others (they see it themselves).
    this.replica.unobserved(() => {
      for (const i of departed) {
        if (i >= this.index.endpointCount) continue;
        // A departed engine's blocks and learned capacity go; a newcomer reusing the index starts fresh.
        this.index.evictEndpoint(i);
        this.index.setCapacity(i, this.index.defaultCapacity);
      }
    });
    this.replica.setMembers(endpoints);
  }
}

/** The index size (`indexCapacityBlocks`). */
export const INDEX_CAPACITY_PARAM = int({ min: 1, max: 100_000_000 })
  .default(DEFAULT_INDEX_CAPACITY_BLOCKS)
  .describe('Per-endpoint LRU capacity of the approximate index, in blocks.');

export const prefixCache = definePlugin({
  type: PREFIX_CACHE_PLUGIN,
  description:
    "Scores each endpoint by the share of the request's leading prefix blocks it is believed to hold (approximate index, one LRU per endpoint), inserts the request's blocks into the chosen endpoint's index and annotates the decision with the match.",
  parameters: section({
    ...blockParams,
    indexCapacityBlocks: INDEX_CAPACITY_PARAM,
  }),
  create: (name, p, handle) => {
    const index = new PrefixIndex({ endpoints: handle.endpoints.size, capacityBlocks: p.indexCapacityBlocks });
    handle.shared(PREFIX_INDEX, () => index);
    const plugin = new PrefixCachePlugin(name, sharedBlockHasher(handle, p), index, p.indexCapacityBlocks, handle.endpoints.all());
    handle.shared(ENGINE_BLOCK_GRANULARITY, () => plugin.granularity);
    handle.shared(PREFIX_INDEX_REPLICA, () => plugin.replica);
    return plugin;
  },
});
