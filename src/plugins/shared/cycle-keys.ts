/**
 * Cycle-state entries the built-in plugins agree on: the prefix plugin's cache evidence,
 * the session key the session scorer read,
 * the endpoints the imbalance escape dropped, and the request's block hashes (computed at
 * most once per cycle per hasher).
 */
import type { Endpoint } from '../../core/types.js';
import type { BlockHashes, BlockHasher } from '../../prefix-cache/block-hasher.js';
import { getScratch, scratchKey, setScratch } from '../../framework/cycle-scratch.js';
import type { Candidate, CycleState } from '../../framework/types.js';

/**
 * Cache evidence published by an affinity scorer: how many leading prefix blocks each
 * endpoint is believed to hold, for every endpoint (not only the surviving candidates), so
 * the picker can tell whether a filter removed the affinity target.
 */
export interface AffinityEvidence {
  /** Indexed by `Endpoint.index`. Valid only during the cycle. */
  readonly matchedByEndpoint: ArrayLike<number>;
  readonly totalBlocks: number;
  /**
   * The most blocks any of `bestOver` holds (0 when none holds any), when the publisher
   * computed it while scoring those candidates: readers over the same candidate array
   * (placement, picker) skip their own pass over every endpoint.
   */
  readonly bestOver?: readonly Candidate[];
  readonly bestMatched?: number;
}

/** The most blocks any candidate holds per the evidence (`bestMatched` when it was computed over these candidates). */
export function bestMatched(ev: AffinityEvidence, candidates: readonly Candidate[]): number {
  if (ev.bestOver === candidates && ev.bestMatched !== undefined) return ev.bestMatched;
  const m = ev.matchedByEndpoint;
  let best = 0;
  for (let i = 0; i < candidates.length; i++) best = Math.max(best, m[candidates[i]!.endpoint.index] ?? 0);
  return best;
}
export const AFFINITY_EVIDENCE = scratchKey<AffinityEvidence>('affinity-evidence');

/** The session key the session-affinity scorer read from the request this cycle. */
export const SESSION_KEY = scratchKey<string>('session-key');

/** The request's session key: the one a session scorer read from its header, or the caller's `sessionKey`. */
export function cycleSessionKey(state: CycleState): string | undefined {
  return getScratch(state, SESSION_KEY) ?? state.request.sessionKey;
}

/** Endpoints the imbalance escape filter removed this cycle. */
export const IMBALANCE_DROPPED = scratchKey<readonly Endpoint[]>('imbalance-dropped');

interface CachedHashes {
  readonly hasher: BlockHasher;
  readonly hashes: BlockHashes;
}
const BLOCK_HASHES = scratchKey<CachedHashes>('block-hashes');

/**
 * The request's chained block hashes from `hasher`, computed at most once per cycle per
 * hasher. The result aliases the hasher's reused buffer: valid until the cycle ends.
 */
export function requestBlockHashes(state: CycleState, hasher: BlockHasher): BlockHashes {
  const cached = getScratch(state, BLOCK_HASHES);
  if (cached !== undefined && cached.hasher === hasher) return cached.hashes;
  const hashes = hasher.hash(state.request.model, state.request.prefix);
  setScratch(state, BLOCK_HASHES, { hasher, hashes });
  return hashes;
}

/** Block hashes computed this cycle by any hasher, if any plugin asked for them. */
export function cycleBlockHashes(state: CycleState): BlockHashes | undefined {
  return getScratch(state, BLOCK_HASHES)?.hashes;
}
