/**
 * Labels a decision from the affinity evidence of the cycle, so metrics can tell apart
 * "cache won", "load won", "nothing cached" and "the imbalance escape moved us away".
 *
 * Rule (best = most matched blocks among the final candidates):
 * - a filter dropped an endpoint holding more blocks than any remaining candidate → imbalance
 * - no remaining candidate holds any block → cold
 * - the chosen endpoint holds `best` blocks → affinity
 * - otherwise (load signals outweighed a better match) → load
 */
import type { DecisionReason } from '../../core/types.js';
import { getScratch } from '../../framework/cycle-scratch.js';
import type { Candidate, CycleState } from '../../framework/types.js';
import { AFFINITY_EVIDENCE, bestMatched, IMBALANCE_DROPPED } from './cycle-keys.js';

/** Returns undefined when no affinity scorer published evidence this cycle. */
export function affinityReason(state: CycleState, candidates: readonly Candidate[], chosen: number): DecisionReason | undefined {
  const ev = getScratch(state, AFFINITY_EVIDENCE);
  if (ev === undefined) return undefined;
  const m = ev.matchedByEndpoint;
  const best = bestMatched(ev, candidates);
  const dropped = getScratch(state, IMBALANCE_DROPPED);
  if (dropped !== undefined) {
    for (const e of dropped) if ((m[e.index] ?? 0) > best) return 'imbalance';
  }
  if (best === 0) return 'cold';
  const c = candidates[chosen];
  return c !== undefined && (m[c.endpoint.index] ?? 0) >= best ? 'affinity' : 'load';
}
