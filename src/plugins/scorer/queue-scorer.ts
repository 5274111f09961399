/**
 * Queue scorer: prefers endpoints with less queued work.
 *
 * Rule: q = effective queue (router in-flight raised to the engine's running+waiting when
 * fresh), or the router's in-flight count alone with `signal: inflight`, or the prefill
 * queue (requests not past their first byte, raised to the engine's waiting queue when
 * fresh) with `signal: prefill` — what time to first token waits for. Score =
 * 1 − (q − min) / max(max − min, softQueue) over the candidates: least loaded 1; the most
 * loaded 0 once the spread reaches `softQueue` requests. Neutral value: 1 for everyone when
 * all queues are equal, so the scorer then does not move the decision.
 *
 * Why the floor: plain min-max normalisation turns a one-request difference (2 vs 3 in
 * flight) into the full [0,1] swing, so a weight-2 queue score would outvote a 50% prefix
 * match at weight 3 and throw the cache away over noise. The cache-aware profile sets
 * softQueue to the imbalance escape's absolute threshold: queue differences count in
 * proportion up to the point where the escape takes over. softQueue 1 (the default) is
 * plain min-max for integer queues (least-request).
 */
import { effectiveQueue, prefillQueue } from '../../endpoints/load.js';
import { definePlugin } from '../../framework/plugin-api.js';
import { num, oneOf, section } from '../../util/schema.js';
import { staleAfter, staleAfterParam } from '../shared/params.js';
import type { Candidate, CycleState, Scorer } from '../../framework/types.js';

export const QUEUE_SCORER = 'queue-scorer';

export const QUEUE_SIGNALS = ['effective', 'inflight', 'prefill'] as const;
export type QueueSignal = (typeof QUEUE_SIGNALS)[number];

export class QueueScorer implements Scorer {
  constructor(
    readonly name: string,
    private readonly signal: QueueSignal,
    private readonly staleAfterMs: number,
    private readonly softQueue = 1,
  ) {}

  queueOf(c: Candidate): number {
    switch (this.signal) {
      case 'inflight':
        return c.load.inflightRequests;
      case 'prefill':
        return prefillQueue(c.load, this.staleAfterMs);
      default:
        return effectiveQueue(c.load, this.staleAfterMs);
    }
  }

  score(_state: CycleState, candidates: readonly Candidate[]): number[] {
    const n = candidates.length;
    if (this.queues.length < n) this.queues = new Float64Array(Math.max(n, 2 * this.queues.length));
    const queues = this.queues;
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < n; i++) {
      const v = this.queueOf(candidates[i]!);
      queues[i] = v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const out = new Array<number>(n);
    const span = max - min;
    const denom = Math.max(span, this.softQueue);
    // Each queue kept from the first pass in a reused buffer (reading it again from the snapshot cost more).
    for (let i = 0; i < n; i++) out[i] = span > 0 ? 1 - (queues[i]! - min) / denom : 1;
    return out;
  }

  /** Each candidate's queue in the current call. */
  private queues = new Float64Array(64);
}

export const queueScorer = definePlugin({
  type: QUEUE_SCORER,
  description:
    'Prefers endpoints with less queued work: 1 − (q − min) / max(max − min, softQueue) over the candidates; all equal → 1 for everyone.',
  parameters: section({
    signal: oneOf(QUEUE_SIGNALS)
      .default('effective')
      .describe(
        'effective: in flight raised to the engine running + waiting; inflight: router count only; prefill: not past the first byte, raised to the engine waiting queue.',
      ),
    softQueue: num({ min: 1, max: 1_000_000 })
      .default(1)
      .describe('Queue differences below this many requests count in proportion instead of spanning [0,1].'),
    ...staleAfterParam,
  }),
  create: (name, p, handle) => new QueueScorer(name, p.signal, staleAfter(p, handle), p.softQueue),
});
